import Foundation

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The body of the running fuzz target.
// Safety (nonisolated(unsafe)): written once in `runFuzzer` before `LLVMFuzzerRunDriver` starts calling back, and
// libFuzzer calls the callback on that same thread, one input at a time: no concurrent access.
nonisolated(unsafe) private var fuzzBody: ((Data) -> Void)?

/// Hands control to libFuzzer (linked with `-sanitize=fuzzer`), which calls `body` with each input.
public func runFuzzer(_ body: @escaping (Data) -> Void) -> Never {
    fuzzBody = body
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    let status = LLVMFuzzerRunDriver(&argc, &argv) { bytes, count in
        let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
        fuzzBody?(data)
        return 0
    }
    exit(status)
}
