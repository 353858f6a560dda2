import ArgumentParser
import Foundation
import WebImage
import WebImageCoders

/// The `webimage` root command. `main` is ours so exit codes follow the contract:
/// 0 every item succeeded, 1 some item failed, 2 usage error.
@main
struct WebImageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webimage",
        abstract: "Load, decode and inspect images with swift-web-image.",
        version: WebImageVersion.current,
        subcommands: [InfoCommand.self, FetchCommand.self, PrefetchCommand.self, CacheCommand.self, DemoCommand.self]
    )

    static func main() async {
        StandardStream.ignoreBrokenPipes()
        Verbosity.bootstrap()
        // Bitmaps outlive their decode: keep freed memory instead of faulting it in per image.
        SystemMemory.tuneAllocatorForImageDecoding()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as ItemsFailed {
            _ = failure
            Foundation.exit(ExitStatus.itemFailed)
        } catch {
            let code = exitCode(for: error)
            if code == ExitCode.success {
                StandardStream.line(fullMessage(for: error))  // --help, --version
                Foundation.exit(ExitStatus.success)
            }
            StandardStream.error.write(fullMessage(for: error) + "\n")
            Foundation.exit(code == ExitCode.validationFailure ? ExitStatus.usage : ExitStatus.itemFailed)
        }
    }
}

enum ExitStatus {
    static let success: Int32 = 0
    static let itemFailed: Int32 = 1
    static let usage: Int32 = 2
}

/// Thrown by a subcommand after it has reported its items, when at least one failed.
struct ItemsFailed: Error {}

enum WebImageVersion {
    static let number = "0.1.0"

    /// `webimage 0.1.0`, then one line per codec library and its version.
    static var current: String {
        (["webimage \(number)"] + CodecLibrary.all.map { "\($0.name) \($0.version)" }).joined(separator: "\n")
    }
}
