import Foundation

/// The shared image corpus named by `WEBIMAGE_CORPUS`: one row of `MANIFEST.tsv` per file.
public struct Corpus: Sendable {
    public struct Entry: Sendable, CustomStringConvertible {
        public var file: String
        public var url: URL
        /// What the bytes are: png, apng, jpeg, gif, webp, avif, heic, heif, jxl, bmp, tiff.
        public var format: String
        public var width: Int?
        public var height: Int?
        public var frames: Int?
        public var traits: Set<String>
        /// decode-ok, sniff, must-fail or no-crash.
        public var expected: String

        public var description: String { file }

        /// The value of a `name=value` trait, such as `exif-orientation`.
        public func trait(_ name: String) -> String? {
            traits.first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
        }
    }

    public var directory: URL
    public var entries: [Entry]

    /// The corpus named by `WEBIMAGE_CORPUS`, or `nil` when the variable is unset or empty.
    public static func fromEnvironment() throws -> Corpus? {
        guard let path = ProcessInfo.processInfo.environment["WEBIMAGE_CORPUS"], !path.isEmpty else { return nil }
        return try Corpus(directory: URL(fileURLWithPath: path))
    }

    /// Entries when the corpus is configured, else an empty list after a printed note (for
    /// parameterised tests, which need their arguments up front).
    public static let entriesOrNote: [Entry] = {
        do {
            guard let corpus = try fromEnvironment() else {
                print("note: WEBIMAGE_CORPUS is not set; skipping the shared-corpus checks")
                return []
            }
            return corpus.entries
        } catch {
            print("error: cannot read the corpus named by WEBIMAGE_CORPUS: \(error)")
            return []
        }
    }()

    public init(directory: URL) throws {
        self.directory = directory
        let manifest = try String(contentsOf: directory.appendingPathComponent("MANIFEST.tsv"), encoding: .utf8)
        var lines = manifest.split(separator: "\n", omittingEmptySubsequences: true).map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
        guard let header = lines.first else { throw CocoaError(.fileReadCorruptFile) }
        lines.removeFirst()
        func column(_ name: String) throws -> Int {
            guard let index = header.firstIndex(of: name) else { throw CocoaError(.fileReadCorruptFile) }
            return index
        }
        let (file, format, width, height, frames, traits, expected) = (
            try column("file"), try column("format"), try column("width"), try column("height"), try column("frames"),
            try column("traits"), try column("expected")
        )
        entries = lines.filter { $0.count == header.count }.map { row in
            Entry(
                file: row[file],
                url: directory.appendingPathComponent(row[file]),
                format: row[format],
                width: Int(row[width]),
                height: Int(row[height]),
                frames: Int(row[frames]),
                traits: Set(row[traits].split(separator: ",").map(String.init)),
                expected: row[expected]
            )
        }
    }
}
