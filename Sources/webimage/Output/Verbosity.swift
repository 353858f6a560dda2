import ArgumentParser
import Logging

/// `--verbose`, accepted by every subcommand; `main` reads it before parsing to set up logging.
struct Verbosity: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Log what the library does to standard error.")
    var verbose = false

    /// Whether the command line asks for logs.
    static var requested: Bool { CommandLine.arguments.contains("--verbose") || CommandLine.arguments.contains("-v") }

    /// Logs go to standard error (stdout carries only results): warnings and worse by default,
    /// everything down to debug with `--verbose`.
    static func bootstrap() {
        let level: Logger.Level = requested ? .debug : .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

    static func logger(_ component: String) -> Logger { Logger(label: "webimage.\(component)") }
}
