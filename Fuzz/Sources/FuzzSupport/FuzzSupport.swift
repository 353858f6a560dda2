import Foundation
import Synchronization

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The body of the running fuzz target. libFuzzer's callback is a C function pointer and cannot
/// capture it, so it lives here; the lock costs nothing next to one input's work.
private let fuzzBody = Mutex<(@Sendable (Data) -> Void)?>(nil)

/// Hands control to libFuzzer (linked with `-sanitize=fuzzer`), which calls `body` with each input.
public func runFuzzer(_ body: @escaping @Sendable (Data) -> Void) -> Never {
    fuzzBody.withLock { $0 = body }
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    let status = LLVMFuzzerRunDriver(&argc, &argv) { bytes, count in
        let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
        fuzzBody.withLock { $0 }?(data)
        return 0
    }
    exit(status)
}
