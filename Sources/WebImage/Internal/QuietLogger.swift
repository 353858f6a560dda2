import Logging

extension Logger {
    /// A logger that drops everything: the library is quiet unless given a logger.
    static func quiet(_ label: String) -> Logger {
        Logger(label: label, factory: { _ in SwiftLogNoOpLogHandler() })
    }
}
