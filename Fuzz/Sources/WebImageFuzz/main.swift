import Foundation
import FuzzSupport
import WebImage

// webimage-fuzz: WEBIMAGE_FUZZ_TARGET=<target> webimage-fuzz [libFuzzer flags] [CORPUS...]
//                webimage-fuzz --make-seeds DIR   (seed inputs made with our own encoders)

let arguments = CommandLine.arguments
if arguments.count == 3, arguments[1] == "--make-seeds" {
    do {
        try FuzzSeeds.write(to: URL(fileURLWithPath: arguments[2], isDirectory: true))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("webimage-fuzz: cannot write seeds: \(error)\n".utf8))
        exit(1)
    }
}
let name = ProcessInfo.processInfo.environment["WEBIMAGE_FUZZ_TARGET"] ?? ""
guard let target = FuzzTargets.all[name] else {
    let known = FuzzTargets.all.keys.sorted().joined(separator: ", ")
    FileHandle.standardError.write(Data("webimage-fuzz: set WEBIMAGE_FUZZ_TARGET to one of: \(known)\n".utf8))
    exit(2)
}
runFuzzer(target)
