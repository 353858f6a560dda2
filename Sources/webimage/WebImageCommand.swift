import ArgumentParser
import Foundation
import WebImage
import WebImageCoders
import WebImageHTTP

/// The `webimage` root command. `main` is ours so exit codes follow the contract:
/// 0 every item succeeded, 1 some item failed, 2 usage error.
@main
struct WebImageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webimage",
        abstract: "Load, decode and inspect images with swift-web-image.",
        // `webimage --version` prints the codec libraries too (`main`); only this line here, as
        // asking their versions would load libavif, libheif and libjxl for every command.
        version: "webimage \(WebImageVersion.number)",
        subcommands: [
            InfoCommand.self, FetchCommand.self, PrefetchCommand.self, CacheCommand.self, ServeCommand.self,
            DemoCommand.self,
        ]
    )

    static func main() async {
        StandardStream.ignoreBrokenPipes()
        Verbosity.bootstrap()
        // One run, then exit: bitmaps up to 4 MiB (a 1000×1000 web image) reuse freed heap
        // memory, while larger ones are mapped and unmapped, so resident memory follows the
        // images alive (12 distinct 3000×2000 JPEGs: 105–111 MB peak, against 155 MB with the
        // library's server-minded defaults), at ~8 ms of page faults per 24 MB bitmap. At 1 MiB
        // every 690×460 web image paid its own page faults too: 1,000 of them decoded in 0.96 s
        // instead of 0.62 s (Benchmarks/fetch-cost.sh).
        SystemMemory.tuneAllocatorForImageDecoding(trimThreshold: 32 << 20, mmapThreshold: 4 << 20)
        if CommandLine.arguments.dropFirst().first == "--version" {
            print(WebImageVersion.current)
            return
        }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as ItemsFailed {
            Foundation.exit(failure.status)
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

/// The exit statuses (wget's numbers where the meanings meet).
enum ExitStatus {
    static let success: Int32 = 0
    /// Some item failed, for different reasons or one without a status of its own.
    static let itemFailed: Int32 = 1
    static let usage: Int32 = 2

    /// What `--help` and the man page say about them.
    static let summary = """
        Exit status: 0 every item succeeded; 1 some failed (mixed or other causes); 2 usage error; \
        when every failure had one cause: 3 writing the output, 4 network, 5 TLS certificate (the server's, \
        or the server refused ours), \
        8 HTTP status, 9 not a decodable image.
        """
}

/// Why an item failed, for the exit status when every failure shares one.
enum FailureKind: Int32, Sendable {
    case output = 3
    case network = 4
    case tls = 5
    case httpStatus = 8
    case decode = 9

    init?(_ error: WebImageError) {
        switch error.code {
        case .networkError:
            let tlsCodes: [HTTPSessionError.Code?] = [.serverCertificateUntrusted, .clientCertificateRejected]
            self = tlsCodes.contains(error.underlying?.code) ? .tls : .network
        case .invalidDownloadStatusCode: self = .httpStatus
        case .badImageData: self = .decode
        default: return nil
        }
    }
}

/// Thrown by a subcommand after it has reported its items, when at least one failed: the
/// cause of each failure (`nil`: one without a status of its own).
struct ItemsFailed: Error {
    var kinds: [FailureKind?] = [nil]

    /// The kind's status when every failure had that kind, else 1.
    var status: Int32 {
        guard let first = kinds.first, let kind = first, kinds.allSatisfy({ $0 == kind }) else {
            return ExitStatus.itemFailed
        }
        return kind.rawValue
    }
}

enum WebImageVersion {
    static let number = "0.1.0"

    /// `webimage 0.1.0`, then one line per codec library and its version.
    static var current: String {
        (["webimage \(number)"] + CodecLibrary.all.map { "\($0.name) \($0.version)" }).joined(separator: "\n")
    }
}
