import Foundation
import Testing
import WebImage
import WebImageTestSupport

@Suite("RegularFile: bounded reads of regular files")
struct RegularFileTests {
    @Test("A prefix, then the rest without reading the prefix again, gives the whole file")
    func prefixThenRest() throws {
        let directory = try TemporaryDirectory(prefix: "webimage-file")
        defer { directory.remove() }
        let bytes = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let url = directory.file("data.bin")
        try bytes.write(to: url)

        let file = try RegularFile(path: url.path)
        #expect(file.size == 10_000)
        let prefix = try file.readPrefix(4096)
        #expect(prefix == bytes.prefix(4096))
        #expect(try file.readAll(after: prefix) == bytes)
        #expect(try file.readAll() == bytes)
        #expect(try file.readPrefix(1 << 20) == bytes)
        #expect(try file.readPrefix(0).isEmpty)
    }

    @Test("FIFOs, folders and devices are refused by kind; a missing file by errno")
    func refusals() throws {
        let directory = try TemporaryDirectory(prefix: "webimage-file")
        defer { directory.remove() }
        let fifo = directory.file("pipe").path
        #expect(mkfifo(fifo, 0o600) == 0)
        func kind(_ path: String) -> RegularFile.Kind? {
            do {
                _ = try RegularFile(path: path)
                return nil
            } catch .notRegularFile(let kind) {
                return kind
            } catch {
                return nil
            }
        }
        #expect(kind(fifo) == .fifo)
        #expect(kind(directory.url.path) == .folder)
        #expect(kind("/dev/zero") == .device)
        #expect(throws: RegularFile.Failure.self) { _ = try RegularFile(path: directory.file("missing").path) }
    }
}
