import WebImageCoders

/// Reads one option's arguments; an empty argument means "unchanged" (`nil`).
struct ArgumentReader {
    let option: ProxyOption

    func expect(_ counts: ClosedRange<Int>) throws(ProxyError) {
        guard counts.contains(option.arguments.count) else {
            let expected =
                counts.lowerBound == counts.upperBound
                ? "\(counts.lowerBound)" : "\(counts.lowerBound) to \(counts.upperBound)"
            throw .badOption("\(option.name): takes \(expected) arguments, got \(option.arguments.count)")
        }
    }

    func argument(_ index: Int) -> String? {
        index < option.arguments.count && !option.arguments[index].isEmpty ? option.arguments[index] : nil
    }

    private func invalid(_ index: Int, _ expected: String) -> ProxyError {
        .badOption("\(option.name): '\(option.arguments[index])' is not \(expected)")
    }

    func size(_ index: Int) throws(ProxyError) -> Int? {
        guard let text = argument(index) else { return nil }
        guard let value = Int(text), value >= 0, value <= 65_535 else {
            throw invalid(index, "a size from 0 to 65535")
        }
        return value
    }

    /// A count of bytes: any whole number from 0 (`max_bytes`).
    func byteCount(_ index: Int) throws(ProxyError) -> Int? {
        guard let text = argument(index) else { return nil }
        guard let value = Int(text), value >= 0 else { throw invalid(index, "a byte count of 0 or more") }
        return value
    }

    func integer(_ index: Int) throws(ProxyError) -> Int? {
        guard let text = argument(index) else { return nil }
        guard let value = Int(text) else { throw invalid(index, "a whole number") }
        return value
    }

    func number(_ index: Int) throws(ProxyError) -> Double? {
        guard let text = argument(index) else { return nil }
        guard let value = Double(text), value.isFinite else { throw invalid(index, "a number") }
        return value
    }

    func bool(_ index: Int) throws(ProxyError) -> Bool? {
        guard let text = argument(index) else { return nil }
        switch text.lowercased() {
        case "1", "t", "true": return true
        case "0", "f", "false": return false
        default: throw invalid(index, "a boolean (1, t, true, 0, f, false)")
        }
    }

    func resizingType(_ index: Int) throws(ProxyError) -> ResizingType? {
        guard let text = argument(index) else { return nil }
        guard let type = ResizingType(rawValue: text) else {
            throw invalid(index, "a resizing type (fit, fill, fill-down, force, auto)")
        }
        return type
    }

    /// `TYPE[:X:Y]`: a gravity name with optional offsets, `fp:X:Y` (0…1 each), or `sm` alone.
    func gravity(from index: Int) throws(ProxyError) -> (gravity: ProxyGravity, offset: GravityOffset) {
        guard let name = argument(index) else { throw .badOption("\(option.name): the gravity is missing") }
        if name == "fp" {
            guard let x = try number(index + 1), let y = try number(index + 2), (0...1).contains(x), (0...1).contains(y)
            else { throw .badOption("\(option.name): fp takes X and Y from 0 to 1") }
            return (.focusPoint(x: x, y: y), GravityOffset())
        }
        guard let gravity = ProxyGravity.names[name] else {
            throw invalid(index, "a gravity (no, so, ea, we, noea, nowe, soea, sowe, ce, fp:X:Y, sm)")
        }
        if gravity == .smart {
            guard option.arguments.count == index + 1 else { throw .badOption("\(option.name): sm takes no offsets") }
            return (gravity, GravityOffset())
        }
        guard option.arguments.count <= index + 3 else {
            throw .badOption("\(option.name): a gravity takes at most two offsets (X and Y)")
        }
        return (gravity, GravityOffset(x: try number(index + 1) ?? 0, y: try number(index + 2) ?? 0))
    }

    /// A hex colour `RRGGBB` at `index`; `nil` when the argument is empty.
    func hexColor(_ index: Int) throws(ProxyError) -> RGBA? {
        guard let hex = argument(index) else { return nil }
        guard hex.count == 6, hex.allSatisfy(\.isHexDigit), let value = UInt32(hex, radix: 16) else {
            throw invalid(index, "a hex colour (RRGGBB)")
        }
        return RGBA(r: UInt8(value >> 16 & 0xFF), g: UInt8(value >> 8 & 0xFF), b: UInt8(value & 0xFF))
    }

    /// `R:G:B` (0–255 each) or a hex colour `RRGGBB`.
    func color() throws(ProxyError) -> RGBA {
        if option.arguments.count == 1 {
            guard let color = try? hexColor(0) else { throw invalid(0, "a colour (R:G:B or RRGGBB)") }
            return color
        }
        var channels: [UInt8] = []
        for index in 0..<3 {
            guard let value = try integer(index), (0...255).contains(value) else {
                throw .badOption("\(option.name): takes R:G:B from 0 to 255 or RRGGBB")
            }
            channels.append(UInt8(value))
        }
        return RGBA(r: channels[0], g: channels[1], b: channels[2])
    }
}
