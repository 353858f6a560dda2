import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// Plays an `AnimatedImage` from a frame buffer of bounded size: SDWebImage's
/// `SDAnimatedImagePlayer` with its `maxBufferSize`.
///
/// The player decodes the frames just ahead of the one shown, in the order they play, on a
/// work queue (never the caller's thread), and keeps at most ``maxBufferSize`` bytes of them:
/// the frames behind the shown one are evicted as it moves on. When the whole animation fits
/// the budget, every frame stays and each is decoded once.
///
/// Time is the caller's: a display link, a timer or a test calls ``advance(by:)`` with the time
/// that passed, and shows the frame it returns. A frame that is not decoded yet holds the one
/// shown (it is not skipped), as SDWebImage's player does. Thread-safe; decoding runs outside
/// the player's lock, and the player calls no code of the caller's.
///
/// ```swift
/// let player = AnimatedImagePlayer(animation: try AnimatedImage(data: gif), maxBufferSize: 8 << 20)
/// // on each display tick:
/// if let frame = player.advance(by: tick) { show(frame.bitmap) }
/// ```
public final class AnimatedImagePlayer: Sendable {
    /// The animation played.
    public let animation: AnimatedImage
    /// The most bytes of decoded frames kept at once (at least one frame's).
    public let maxBufferSize: Int
    /// The buffer used when `maxBufferSize` is 0: 32 MiB.
    public static let automaticBufferSize = 32 << 20

    private let queue: ImageWorkQueue
    private let frameBytes: Int
    /// How many frames the budget holds, from the shown one on (at most every frame).
    private let window: Int
    private let state = Protected(State())

    private struct State: Sendable {
        var buffer: [Int: DecodedImage.Frame] = [:]
        var current = 0
        var loop = 0
        /// Time spent on the shown frame so far.
        var shownFor: TimeInterval = 0
        var rate = 1.0
        var finished = false
        var stopped = false
        /// The frame being decoded now, if any.
        var decoding: Int?
        var error: CoderError?
    }

    /// A player at frame 0 whose buffer holds at most `maxBufferSize` bytes of frames (0: the
    /// ``automaticBufferSize``), decoding on `queue` (default ``ImageWorkQueue/decoding``, at
    /// low priority). The first frames start decoding at once.
    public init(animation: AnimatedImage, maxBufferSize: Int = 0, queue: ImageWorkQueue = .decoding) {
        self.animation = animation
        self.queue = queue
        frameBytes = max(1, animation.frameSize.pixelCount * 4)
        let budget = maxBufferSize > 0 ? maxBufferSize : Self.automaticBufferSize
        self.maxBufferSize = max(budget, frameBytes)
        window = min(animation.frameCount, max(1, self.maxBufferSize / frameBytes))
        decodeNext()
    }

    /// The index of the frame shown now.
    public var currentFrameIndex: Int { state.withLock { $0.current } }
    /// How many times the animation has played to its end and started again.
    public var currentLoop: Int { state.withLock { $0.loop } }
    /// Whether it played its `AnimatedImage.loopCount` loops (never for 0, forever).
    public var isFinished: Bool { state.withLock { $0.finished } }
    /// Speed: 1 plays the frames at their durations, 2 twice as fast. Default 1.
    public var playbackRate: Double {
        get { state.withLock { $0.rate } }
        set { state.withLock { $0.rate = max(0, newValue) } }
    }
    /// The frame shown now, once decoded.
    public var currentFrame: DecodedImage.Frame? { state.withLock { $0.buffer[$0.current] } }
    /// The indices of the frames held now, ascending.
    public var bufferedFrameIndices: [Int] { state.withLock { $0.buffer.keys.sorted() } }
    /// The bytes of the frames held now (at most ``maxBufferSize``).
    public var bufferedByteCount: Int { state.withLock { $0.buffer.count } * frameBytes }
    /// Why decoding stopped, when a frame failed to decode: playback then holds its frame.
    public var error: CoderError? { state.withLock { $0.error } }

    /// Moves playback on by `elapsed` seconds (times ``playbackRate``) and returns the frame to
    /// show when it changed; `nil` when the shown frame stays, the next one is not decoded yet,
    /// or playback finished. A long `elapsed` passes over several frames.
    public func advance(by elapsed: TimeInterval) -> DecodedImage.Frame? {
        let shown = state.withLock { (state) -> DecodedImage.Frame? in
            guard !state.finished, !state.stopped, state.buffer[state.current] != nil else { return nil }
            state.shownFor += max(0, elapsed) * state.rate
            var moved = false
            while state.shownFor >= Self.showingTime(animation.duration(at: state.current)) {
                var next = state.current + 1
                var loop = state.loop
                if next == animation.frameCount {
                    if animation.loopCount > 0 && loop + 1 >= animation.loopCount {
                        state.finished = true
                        break
                    }
                    next = 0
                    loop += 1
                }
                guard state.buffer[next] != nil else {
                    // Not decoded yet: hold the shown frame, as if it had only just run out.
                    state.shownFor = Self.showingTime(animation.duration(at: state.current))
                    break
                }
                state.shownFor -= Self.showingTime(animation.duration(at: state.current))
                state.current = next
                state.loop = loop
                moved = true
            }
            evictOutsideWindow(&state)
            return moved ? state.buffer[state.current] : nil
        }
        decodeNext()
        return shown
    }

    /// Shows frame `index` (clamped to the animation) from its start, in the current loop.
    public func seek(toFrame index: Int) {
        state.withLock { (state) in
            state.current = min(max(0, index), animation.frameCount - 1)
            state.shownFor = 0
            state.finished = false
            evictOutsideWindow(&state)
        }
        decodeNext()
    }

    /// Stops playback for good: the buffer is emptied, no frame is decoded after the one under
    /// way, and the animation's decoder state is freed (`AnimatedImage.discardDecoderState()`,
    /// on the work queue): an animation kept in a cache then holds its bytes only.
    public func stop() {
        let idle = state.withLock { (state) in
            state.stopped = true
            state.buffer.removeAll()
            return state.decoding == nil
        }
        // A decode under way frees it when it ends.
        if idle { _ = queue.enqueue(priority: .low) { [animation] in animation.discardDecoderState() } }
    }

    /// Browsers show a frame of 10 ms or less for 100 ms; so does the player.
    private static func showingTime(_ duration: TimeInterval) -> TimeInterval {
        duration <= 0.01 ? 0.1 : duration
    }

    /// The frames to hold, in play order from the shown one.
    private func windowIndices(from current: Int) -> [Int] {
        (0..<window).map { (current + $0) % animation.frameCount }
    }

    private func evictOutsideWindow(_ state: inout State) {
        guard state.buffer.count > 0, window < animation.frameCount else { return }
        let kept = Set(windowIndices(from: state.current))
        state.buffer = state.buffer.filter { kept.contains($0.key) }
    }

    /// Starts decoding the first frame of the window not held yet, unless one is under way.
    private func decodeNext() {
        let next = state.withLock { (state) -> Int? in
            guard !state.stopped, state.error == nil, state.decoding == nil else { return nil }
            guard let missing = windowIndices(from: state.current).first(where: { state.buffer[$0] == nil }) else {
                return nil
            }
            state.decoding = missing
            return missing
        }
        guard let next else { return }
        _ = queue.enqueue(priority: .low) { [self] in
            let decoded: Result<DecodedImage.Frame, CoderError>
            do throws(CoderError) {
                decoded = .success(try animation.frame(at: next))
            } catch {
                decoded = .failure(error)
            }
            let stopped = state.withLock { (state) in
                state.decoding = nil
                switch decoded {
                case .success(let frame):
                    if !state.stopped && windowIndices(from: state.current).contains(next) {
                        state.buffer[next] = frame
                    }
                case .failure(let error):
                    state.error = error
                }
                return state.stopped
            }
            if stopped { return animation.discardDecoderState() }
            decodeNext()
        }
    }
}
