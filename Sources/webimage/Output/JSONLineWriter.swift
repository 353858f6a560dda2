import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A JSON value small enough to write by hand, in a stable key order.
enum JSONValue: Sendable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case null
    case object([(String, JSONValue)])

    var serialized: String {
        switch self {
        case .string(let value): return Self.quote(value)
        case .int(let value): return String(value)
        case .double(let value): return value.isFinite ? String(format: "%.3f", value) : "null"
        case .bool(let value): return value ? "true" : "false"
        case .null: return "null"
        case .object(let fields):
            return "{" + fields.map { "\(Self.quote($0.0)):\($0.1.serialized)" }.joined(separator: ",") + "}"
        }
    }

    private static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// Writes one JSON object per line to standard output, flushing each line.
enum JSONLineWriter {
    static func write(_ object: JSONValue, to stream: StandardStream = .output) {
        stream.write(object.serialized + "\n")
    }
}

/// Writes diagnostics to standard error.
enum Diagnostics {
    static func write(_ line: String) {
        StandardStream.error.write(line + "\n")
    }
}

/// Standard output or error, written with `write(2)`: every line reaches the stream at once
/// (no stdio buffer to lose), and a reader that went away (`| head -1`, EPIPE) ends the command
/// quietly instead of trapping.
struct StandardStream: Sendable {
    let descriptor: Int32

    static let output = StandardStream(descriptor: STDOUT_FILENO)
    static let error = StandardStream(descriptor: STDERR_FILENO)

    /// `message` without a leading "`input`: " (library messages name their input; a line
    /// that starts with the input already should not say it twice).
    static func cause(_ message: String, of input: String) -> String {
        message.hasPrefix(input + ": ") ? String(message.dropFirst(input.count + 2)) : message
    }

    /// A line of text output (what `print` would write), on standard output.
    static func line(_ text: String) { output.write(text + "\n") }

    func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// Writes bytes (an image on standard output), the same way as text.
    func write(_ data: Data) {
        data.withUnsafeBytes { write($0) }
    }

    private func write(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, base + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                // The reader is gone (EPIPE) or the stream is unusable: nobody can read what
                // follows, so stop now, quietly (status 1: not every line was delivered).
                Glibc._exit(ExitStatus.itemFailed)
            }
            offset += written
        }
    }

    /// Stop the process from being killed by SIGPIPE, so a closed pipe shows up as EPIPE here.
    static func ignoreBrokenPipes() { signal(SIGPIPE, SIG_IGN) }
}
