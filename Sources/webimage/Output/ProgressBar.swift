import Dispatch
import Foundation
@_spi(WebImageInternals) import WebImageCoders

/// A one-line progress display on standard error: items done of all, bytes received, the rate,
/// and the time left for the downloads under way (those whose size is known).
///
/// Drawn only when `--progress` asks and standard error is a terminal; otherwise every method
/// does nothing. Result lines go through ``print(_:)``, which erases the bar, prints, and
/// draws it again below, so no line is glued to it. ``close()`` erases it for good, and Ctrl-C
/// erases it before the process ends (status 130). Thread-safe; redraws at most every 100 ms.
final class ProgressBar: Sendable {
    private struct State {
        var done = 0
        var finishedBytes: Int64 = 0
        var active: [Int: (received: Int64, expected: Int64)] = [:]
        var drawn = false
        var closed = false
        var lastDraw: ContinuousClock.Instant?
    }

    private let total: Int
    private let enabled: Bool
    private let start = ContinuousClock.now
    private let state = Protected(State())

    /// Erases the line: carriage return, then "erase in line".
    static let erase = "\r\u{1B}[2K"

    init(total: Int, requested: Bool) {
        self.total = total
        enabled = requested && isatty(STDERR_FILENO) != 0
        if enabled { Self.erasesOnInterrupt }
    }

    /// Bytes received so far by item `index` (of `expected`, 0 or less when unknown).
    func update(_ index: Int, received: Int64, expected: Int64) {
        guard enabled else { return }
        state.withLock { state in
            state.active[index] = (received, expected)
            draw(&state, force: false)
        }
    }

    /// Item `index` ended, after `bytes` bytes (`nil`: what its updates said).
    func finish(_ index: Int, bytes: Int64? = nil) {
        guard enabled else { return }
        state.withLock { state in
            let progress = state.active.removeValue(forKey: index)
            state.finishedBytes += bytes ?? progress?.received ?? 0
            state.done += 1
            draw(&state, force: true)
        }
    }

    /// One more item ended (when items report no bytes).
    func advance() {
        guard enabled else { return }
        state.withLock { state in
            state.done += 1
            draw(&state, force: true)
        }
    }

    /// Writes result lines, each to its stream, with the bar erased first and drawn again after
    /// (under the bar's lock, so no redraw lands between them; no caller code runs under it).
    func print(_ lines: [(text: String, stream: StandardStream)]) {
        guard enabled else {
            for line in lines { line.stream.write(line.text) }
            return
        }
        state.withLock { state in
            if state.drawn { StandardStream.error.write(Self.erase) }
            state.drawn = false
            for line in lines { line.stream.write(line.text) }
            draw(&state, force: true)
        }
    }

    /// Erases the bar: the run is over.
    func close() {
        guard enabled else { return }
        state.withLock { state in
            if state.drawn { StandardStream.error.write(Self.erase) }
            state.drawn = false
            state.closed = true
        }
    }

    private func draw(_ state: inout State, force: Bool) {
        guard !state.closed else { return }
        let now = ContinuousClock.now
        if !force, let last = state.lastDraw, now - last < .milliseconds(100) { return }
        state.lastDraw = now
        StandardStream.error.write(Self.erase + line(state, elapsed: now - start))
        state.drawn = true
    }

    private func line(_ state: State, elapsed: Duration) -> String {
        let width = 20
        let filled = total == 0 ? width : width * state.done / total
        var text = "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "]"
        text += " \(state.done)/\(total)"
        let received = state.finishedBytes + state.active.values.reduce(0) { $0 + $1.received }
        guard received > 0 else { return text }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        text += "  \(Self.bytes(received))"
        guard seconds > 0.05 else { return text }
        let rate = Double(received) / seconds
        text += "  \(Self.bytes(Int64(rate)))/s"
        let remaining = state.active.values.reduce(Int64(0)) {
            $0 + ($1.expected > 0 ? max(0, $1.expected - $1.received) : 0)
        }
        if remaining > 0, rate > 0 {
            let left = Int((Double(remaining) / rate).rounded(.up))
            text += "  ETA \(left / 60):" + (left % 60 < 10 ? "0" : "") + "\(left % 60)"
        }
        return text
    }

    /// `512 B`, `3.4 kB`, `12.0 MB`, `1.5 GB` (powers of 1000).
    static func bytes(_ count: Int64) -> String {
        guard count >= 1000 else { return "\(count) B" }
        let units = ["kB", "MB", "GB", "TB"]
        var value = Double(count) / 1000
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return String(format: "%.1f %@", value, units[unit])
    }

    /// Ctrl-C: erase the line (a bar may be on it) and end with the shell's status for SIGINT.
    /// Installed once, the first time a bar is drawn; the signal source lives as long as the process.
    private static let erasesOnInterrupt: Void = {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler {
            StandardStream.error.write(erase)
            _exit(130)
        }
        source.resume()
        _ = Unmanaged.passRetained(source as AnyObject)
    }()
}
