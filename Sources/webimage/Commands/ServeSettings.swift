import ArgumentParser
import Configuration
import Foundation

/// Where each `webimage serve` setting comes from, first found wins: the flag; the environment
/// as `WEBIMAGE_<NAME>` (the flag's name in capitals, `-` as `_`); imgproxy's `IMGPROXY_<NAME>`
/// for the settings whose meaning is the same (so an imgproxy deployment's environment works
/// unchanged); the JSON config file (`--config` or `WEBIMAGE_CONFIG`, keys are the flag names);
/// the default. swift-configuration reads the environment and the file; the settings remember
/// where each value came from for `--print-config`, secrets masked.
final class ServeSettings {
    /// Where a value came from.
    enum Origin: CustomStringConvertible {
        case flag
        case environment(String)
        case file(String)
        case defaultValue

        var description: String {
            switch self {
            case .flag: "flag"
            case .environment(let name): "environment \(name)"
            case .file(let path): "file \(path)"
            case .defaultValue: "default"
            }
        }
    }

    /// One resolved setting, as `--print-config` shows it.
    struct Entry {
        var name: String
        var value: String
        var origin: Origin
    }

    private(set) var entries: [Entry] = []
    /// The environment the settings are read from.
    let environment: [String: String]
    private let webimageEnvironment: EnvironmentVariablesProvider
    private let file: (path: String, snapshot: JSONSnapshot)?

    /// Settings over `environment`, with the config file `--config` names (or `WEBIMAGE_CONFIG`).
    /// - Throws: `ValidationError` naming the file when it cannot be read or is not JSON.
    init(environment: [String: String], configFile: String?) throws {
        self.environment = environment
        webimageEnvironment = EnvironmentVariablesProvider(environmentVariables: environment)
        guard let path = configFile ?? environment["WEBIMAGE_CONFIG"].flatMap({ $0.isEmpty ? nil : $0 }) else {
            file = nil
            return
        }
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ValidationError("--config '\(path)' cannot be read: \(error.localizedDescription)")
        }
        do {
            file = (path, try JSONSnapshot(data: bytes.span.bytes, providerName: path, parsingOptions: .default))
        } catch {
            throw ValidationError("--config '\(path)' is not a JSON object of settings: \(error)")
        }
    }

    /// The value of setting `name`: `flag` when given, else the first of the environment, the
    /// imgproxy variables `imgproxy` and the file, parsed by `parse`; else `defaultValue`.
    /// `secret` values print as `***`.
    /// - Throws: `ValidationError` naming where a value came from when it does not parse.
    func value<Value>(
        _ name: String,
        flag: Value?,
        default defaultValue: Value,
        imgproxy: [String] = [],
        secret: Bool = false,
        parse: (String) throws -> Value
    ) throws -> Value {
        if let found = try optional(name, flag: flag, imgproxy: imgproxy, secret: secret, parse: parse) {
            return found
        }
        record(name, "\(defaultValue)", .defaultValue, secret: secret)
        return defaultValue
    }

    /// ``value(_:flag:default:imgproxy:secret:parse:)`` for a setting without a default: `nil`
    /// when nothing gives it.
    func optional<Value>(
        _ name: String,
        flag: Value?,
        imgproxy: [String] = [],
        secret: Bool = false,
        parse: (String) throws -> Value
    ) throws -> Value? {
        if let flag {
            record(name, "\(flag)", .flag, secret: secret)
            return flag
        }
        guard let (text, origin) = try raw(name, imgproxy: imgproxy) else {
            record(name, "none", .defaultValue, secret: false)
            return nil
        }
        do {
            let value = try parse(text)
            record(name, text, origin, secret: secret)
            return value
        } catch {
            throw ValidationError("\(origin) for --\(name): \(Self.reason(error, secret ? "***" : text))")
        }
    }

    /// A flag that can only turn a setting on (`--insecure`): on when given, else from the
    /// environment or file as a boolean.
    func switchedOn(_ name: String, flag: Bool, imgproxy: [String] = []) throws -> Bool {
        try value(name, flag: flag ? true : nil, default: false, imgproxy: imgproxy, parse: Self.boolean)
    }

    /// A repeatable setting: the flags when any are given, else a comma-separated list from the
    /// environment (`separator` for imgproxy's own lists) or the file (an array or a string).
    func list(
        _ name: String,
        flags: [String],
        imgproxy: [String] = [],
        secret: Bool = false,
        separator: Character = ","
    ) throws -> [String] {
        if !flags.isEmpty {
            record(name, flags.joined(separator: ","), .flag, secret: secret)
            return flags
        }
        if let file, let array = try? file.snapshot.value(forKey: AbsoluteConfigKey([name]), type: .stringArray).value,
            case .stringArray(let items) = array.content
        {
            record(name, items.joined(separator: ","), .file(file.path), secret: secret)
            return items
        }
        guard let (text, origin) = try raw(name, imgproxy: imgproxy) else {
            record(name, "none", .defaultValue, secret: false)
            return []
        }
        record(name, text, origin, secret: secret)
        return text.split(separator: separator).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// `WEBIMAGE_<NAME>`, then the imgproxy names, then the file's `name`, as text.
    private func raw(_ name: String, imgproxy: [String]) throws -> (String, Origin)? {
        let key = AbsoluteConfigKey(["webimage", name])
        if let found = try? webimageEnvironment.value(forKey: key, type: .string), let value = found.value,
            case .string(let text) = value.content
        {
            return (text, .environment(found.encodedKey))
        }
        for variable in imgproxy {
            if let text = environment[variable] { return (text, .environment(variable)) }
        }
        guard let file else { return nil }
        for type in [ConfigType.string, .int, .double, .bool] {
            guard let found = try? file.snapshot.value(forKey: AbsoluteConfigKey([name]), type: type).value else {
                continue
            }
            switch found.content {
            case .string(let text): return (text, .file(file.path))
            case .int(let number): return (String(number), .file(file.path))
            case .double(let number): return (String(number), .file(file.path))
            case .bool(let flag): return (flag ? "true" : "false", .file(file.path))
            default: continue
            }
        }
        return nil
    }

    /// Shows `value` for `name` in `--print-config` when nothing set it: the default that
    /// applies, where the setting's own default reads "none".
    func showDefault(_ name: String, as value: String) {
        guard let entry = entries.first(where: { $0.name == name }), case .defaultValue = entry.origin else { return }
        record(name, value, .defaultValue, secret: false)
    }

    private func record(_ name: String, _ value: String, _ origin: Origin, secret: Bool) {
        entries.removeAll { $0.name == name }
        entries.append(Entry(name: name, value: secret && !value.isEmpty ? "***" : value, origin: origin))
    }

    private static func reason(_ error: any Error, _ text: String) -> String {
        if let validation = error as? ValidationError { return validation.message }
        return "'\(text)' \(error)"
    }

    // MARK: Parsers for values given as text

    /// A flag's text parsed by `parse`; a failure names the flag.
    static func parsed<Value>(_ text: String?, _ name: String, _ parse: (String) throws -> Value) throws -> Value? {
        guard let text else { return nil }
        do {
            return try parse(text)
        } catch {
            throw ValidationError("--\(name): \(reason(error, text))")
        }
    }

    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    static func boolean(_ text: String) throws -> Bool {
        switch text.lowercased() {
        case "1", "t", "true", "yes", "on": return true
        case "0", "f", "false", "no", "off": return false
        default: throw Invalid(description: "is not a boolean (true, false, 1, 0)")
        }
    }

    static func integer(_ text: String) throws -> Int {
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)) else {
            throw Invalid(description: "is not a whole number")
        }
        return value
    }

    static func number(_ text: String) throws -> Double {
        guard let value = Double(text.trimmingCharacters(in: .whitespaces)), value.isFinite else {
            throw Invalid(description: "is not a number")
        }
        return value
    }

    /// imgproxy's `IMGPROXY_BIND` may leave the host out (`:8080`: every interface).
    static func imgproxyBind(_ text: String) -> String { text.hasPrefix(":") ? "0.0.0.0" + text : text }

    /// imgproxy's 0 for "no limit".
    static func unlimitedWhenZero(_ text: String, unlimited: String) -> String {
        text.trimmingCharacters(in: .whitespaces) == "0" ? unlimited : text
    }

    /// The table `--print-config` prints: name, value, origin, aligned.
    var table: String {
        let nameWidth = entries.map(\.name.count).max() ?? 0
        let valueWidth = min(48, entries.map(\.value.count).max() ?? 0)
        return entries.sorted { $0.name < $1.name }.map { entry in
            let name = entry.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            let value = entry.value.padding(toLength: max(valueWidth, entry.value.count), withPad: " ", startingAt: 0)
            return "\(name)  \(value)  (\(entry.origin))"
        }.joined(separator: "\n")
    }
}
