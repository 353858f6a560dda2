import Foundation
import Testing
import WebImage
import WebImageCoders
import WebImageTestSupport

@Suite("AnimatedImagePlayer: playback from a bounded frame buffer")
struct AnimatedImagePlayerTests {
    /// 16 frames of 40×40 (6,400 bytes each), each frame unlike the one before.
    static let source = GIFBuilder.checkerAnimation(width: 40, height: 40, frames: 16)

    @Test("Four frames' budget: frames decode ahead, evict behind, and play in order through a wrap")
    func boundedBuffer() async throws {
        let whole = try ImageCodersManager.shared.decode(Self.source)
        let animation = try AnimatedImage(data: Self.source)
        let player = AnimatedImagePlayer(animation: animation, maxBufferSize: 4 * 40 * 40 * 4)
        #expect(player.maxBufferSize == 25_600)
        #expect(await waitUntil({ player.bufferedFrameIndices == [0, 1, 2, 3] }))
        #expect(player.currentFrame?.bitmap == whole.frames[0].bitmap)
        // Two loops and a bit, a frame's duration at a time: each frame shows in turn.
        for step in 1...36 {
            let shownIndex = player.currentFrameIndex
            let expected = step % 16
            #expect(await waitUntil({ player.bufferedFrameIndices.contains(expected) }), "step \(step)")
            let frame = try #require(player.advance(by: animation.duration(at: shownIndex)), "step \(step)")
            #expect(player.currentFrameIndex == expected)
            #expect(frame.bitmap == whole.frames[expected].bitmap, "step \(step)")
            #expect(frame.duration == whole.frames[expected].duration)
            #expect(player.bufferedByteCount <= player.maxBufferSize)
            // Behind the shown frame nothing stays: only the window from it on.
            let window = Set((0..<4).map { (expected + $0) % 16 })
            #expect(Set(player.bufferedFrameIndices).isSubset(of: window), "step \(step)")
        }
        #expect(player.currentLoop == 2)
        player.stop()
        #expect(player.bufferedFrameIndices.isEmpty)
        #expect(player.advance(by: 10) == nil)
    }

    @Test("A frame not decoded yet holds the shown one; time less than a frame's moves nothing")
    func waitsForFrames() async throws {
        let animation = try AnimatedImage(data: Self.source)
        // A one-thread queue kept busy: the player cannot decode until it is let go.
        let queue = ImageWorkQueue(width: 1, name: "held")
        let gate = DispatchSemaphore(value: 0)
        _ = queue.enqueue { gate.wait() }
        let player = AnimatedImagePlayer(animation: animation, maxBufferSize: 2 * 40 * 40 * 4, queue: queue)
        #expect(player.currentFrame == nil)
        #expect(player.advance(by: 5) == nil)
        #expect(player.currentFrameIndex == 0)
        gate.signal()
        #expect(await waitUntil({ player.bufferedFrameIndices == [0, 1] }))
        #expect(player.advance(by: animation.duration(at: 0) / 2) == nil)
        #expect(player.currentFrameIndex == 0)
        #expect(player.advance(by: animation.duration(at: 0) / 2) != nil)
        #expect(player.currentFrameIndex == 1)
    }

    @Test("A budget over the whole animation keeps every frame; a finite loop count finishes playback")
    func finiteLoops() async throws {
        // Three loops of 6 frames of 40-70 ms.
        let data = try GeneratedImages.movingSquareAnimation(width: 32, height: 32, frames: 6, format: .webp)
        let animation = try AnimatedImage(data: data)
        #expect(animation.loopCount == 3)
        let player = AnimatedImagePlayer(animation: animation)
        #expect(await waitUntil({ player.bufferedFrameIndices == Array(0..<6) }))
        var shown = 0
        while !player.isFinished {
            if player.advance(by: 0.04) != nil { shown += 1 }
            #expect(shown < 100, "playback never finished")
            if shown >= 100 { break }
        }
        // 6 frames × 3 loops, the first shown from the start.
        #expect(shown == 17)
        #expect(player.currentFrameIndex == 5 && player.currentLoop == 2)
        #expect(player.advance(by: 1) == nil)
        player.seek(toFrame: 2)
        #expect(!player.isFinished && player.currentFrameIndex == 2)
        #expect(player.bufferedFrameIndices == Array(0..<6))
    }
}
