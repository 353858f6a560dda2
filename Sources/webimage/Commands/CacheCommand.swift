import ArgumentParser
import Foundation
import WebImage

/// `webimage cache stats|clear|trim|ls`: looks after a disk cache folder.
struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Inspect and clean a disk cache folder.",
        discussion: """
            Example:
              webimage cache stats --json --cache-dir ~/.cache/webimage/default
            """,
        subcommands: [Stats.self, Clear.self, Trim.self, List.self]
    )

    struct Folder: ParsableArguments {
        @Option(name: .customLong("cache-dir"), help: "Disk cache folder (default: $XDG_CACHE_HOME/webimage/default).")
        var cacheDirectory: String?

        @Flag(help: "Print one JSON object per line on standard output.")
        var json = false

        @OptionGroup var verbosity: Verbosity

        var url: URL {
            cacheDirectory.map { URL(fileURLWithPath: $0, isDirectory: true) }
                ?? ImageCache.defaultRootDirectory.appendingPathComponent("default", isDirectory: true)
        }

        func validate() throws {
            try LoadingOptions.validateCacheDirectory(url.path)
            guard FileManager.default.fileExists(atPath: url.path) else {
                throw ValidationError("--cache-dir \(url.path): no such folder")
            }
        }

        func emit(_ object: JSONValue, text: String) {
            if json { JSONLineWriter.write(object) } else { StandardStream.line(text) }
        }
    }

    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stats",
            abstract: "Size and entry count.",
            discussion: "Example:\n  webimage cache stats --json --cache-dir /tmp/cache"
        )
        @OptionGroup var folder: Folder

        func run() throws {
            let cache = DiskCache(directory: folder.url)
            let (count, size) = (cache.count, cache.totalSize)
            let temporary = cache.temporaryFiles
            folder.emit(
                .object([
                    ("directory", .string(cache.directory.path)), ("count", .int(count)), ("bytes", .int(size)),
                    ("temporaryFiles", .int(temporary.count)), ("temporaryBytes", .int(temporary.size)),
                ]),
                text: "\(cache.directory.path): \(count) entries, \(size) bytes"
                    + (temporary.count > 0
                        ? "; \(temporary.count) temporary files (\(temporary.size) bytes; writes in progress or left by a killed writer)"
                        : "")
            )
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clear",
            abstract: "Remove every entry.",
            discussion: "Example:\n  webimage cache clear --cache-dir /tmp/cache"
        )
        @OptionGroup var folder: Folder

        func run() throws {
            let cache = DiskCache(directory: folder.url)
            let count = cache.count
            cache.removeAll()
            folder.emit(
                .object([("directory", .string(cache.directory.path)), ("removed", .int(count))]),
                text: "\(cache.directory.path): removed \(count) entries"
            )
        }
    }

    struct Trim: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "trim",
            abstract: "Remove expired entries, then trim to half the size limit when over it.",
            discussion: "Example:\n  webimage cache trim --max-age 7d --max-size 100M --cache-dir /tmp/cache"
        )
        @OptionGroup var folder: Folder

        @Option(
            name: .customLong("max-age"),
            help: "How long an entry lives, e.g. 7d or 12h (default 7d).",
            transform: Units.seconds
        )
        var maxAge: Double = 7 * 24 * 3600

        @Option(
            name: .customLong("max-size"),
            help: "What the folder may hold, e.g. 500M or 1G (default 1G).",
            transform: Units.bytes
        )
        var maxSize: Int64 = 1 << 30

        @Option(
            name: .customLong("expire-type"),
            help: "Which date --max-age counts from: access-date, modification-date (default) or creation-date."
        )
        var expireType = "modification-date"

        /// The kebab-case names (and the library's camelCase ones).
        static func expireType(_ name: String) -> DiskCache.ExpireType? {
            switch name {
            case "access-date", "accessDate": .accessDate
            case "modification-date", "modificationDate": .modificationDate
            case "creation-date", "creationDate": .creationDate
            default: nil
            }
        }

        func validate() throws {
            guard Self.expireType(expireType) != nil else {
                throw ValidationError(
                    "--expire-type '\(expireType)' is not access-date, modification-date or creation-date"
                )
            }
        }

        func run() throws {
            var configuration = DiskCache.Configuration()
            configuration.maxAge = .seconds(maxAge)
            configuration.maxSize = Int(clamping: maxSize)
            configuration.expireType = Self.expireType(expireType) ?? .modificationDate
            let cache = DiskCache(directory: folder.url, configuration: configuration)
            let result = cache.removeExpiredEntries()
            folder.emit(
                .object([
                    ("directory", .string(cache.directory.path)), ("expired", .int(result.expiredRemoved)),
                    ("trimmed", .int(result.trimmedRemoved)), ("count", .int(result.remainingCount)),
                    ("bytes", .int(result.remainingSize)),
                ]),
                text:
                    "\(cache.directory.path): removed \(result.expiredRemoved) expired and \(result.trimmedRemoved) to fit; \(result.remainingCount) entries, \(result.remainingSize) bytes left"
            )
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ls",
            abstract: "One line per entry: key, size, type, validators, stored date.",
            discussion: "Example:\n  webimage cache ls --json --cache-dir /tmp/cache"
        )
        @OptionGroup var folder: Folder

        func run() throws {
            let formatter = ISO8601DateFormatter()
            for entry in DiskCache(directory: folder.url).entries() {
                var fields: [(String, JSONValue)] = [
                    ("key", .string(entry.key)), ("bytes", .int(entry.dataSize)),
                    ("storedDate", .string(formatter.string(from: entry.storedDate))),
                    ("file", .string(entry.fileURL.path)),
                ]
                if let type = entry.metadata.contentType { fields.append(("contentType", .string(type))) }
                if let etag = entry.metadata.etag { fields.append(("etag", .string(etag))) }
                if let modified = entry.metadata.lastModified { fields.append(("lastModified", .string(modified))) }
                folder.emit(
                    .object(fields),
                    text: "\(entry.key)  \(entry.dataSize) bytes  \(formatter.string(from: entry.storedDate))"
                )
            }
        }
    }
}
