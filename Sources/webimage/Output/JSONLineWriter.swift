import Foundation

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
    static func write(_ object: JSONValue) {
        FileHandle.standardOutput.write(Data((object.serialized + "\n").utf8))
    }
}

/// Writes diagnostics to standard error.
enum Diagnostics {
    static func write(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
