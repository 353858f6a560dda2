import Foundation
import WebImage
import WebImageTestSupport

// A child process for the disk cache's crash and multi-process tests.
//
//   webimage-cache-stress DIRECTORY FIRST COUNT [ROUNDS]
//
// Stores CacheStressPayload entries FIRST..<FIRST+COUNT into DIRECTORY, ROUNDS times over
// (default: until killed), reading one back after each write. Prints "ready" after the first
// entry and exits 1 if a read ever returns bytes that are not whole.

let arguments = CommandLine.arguments
guard arguments.count >= 4, let first = Int(arguments[2]), let count = Int(arguments[3]), count > 0 else {
    FileHandle.standardError.write(Data("usage: webimage-cache-stress DIRECTORY FIRST COUNT [ROUNDS]\n".utf8))
    exit(2)
}
let rounds = arguments.count > 4 ? Int(arguments[4]) ?? 1 : Int.max
let cache = DiskCache(directory: URL(fileURLWithPath: arguments[1]))
var announced = false
for round in 0..<rounds {
    for index in first..<first + count {
        let key = CacheStressPayload.key(index)
        do {
            try cache.store(CacheStressPayload.bytes(forKey: key), forKey: key)
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            exit(1)
        }
        if !announced {
            FileHandle.standardOutput.write(Data("ready\n".utf8))
            announced = true
        }
        let probe = CacheStressPayload.key(first + (index + round) % count)
        if let data = cache.data(forKey: probe), data != CacheStressPayload.bytes(forKey: probe) {
            FileHandle.standardError.write(Data("torn entry \(probe)\n".utf8))
            exit(1)
        }
    }
}
