import Foundation
import Synchronization

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The body of the running fuzz target, in a class: libFuzzer's callback is a C function pointer
/// and cannot capture it, so it lives in `fuzzBody`.
private final class FuzzBody: Sendable {
    let run: @Sendable (Data) -> Void
    init(_ run: @escaping @Sendable (Data) -> Void) { self.run = run }
}

/// Holds a class, not the closure itself: reading a closure out of `Mutex` through its `inout`
/// wraps the stored value in two more reabstraction thunks each time (Swift 6.3), so after
/// ~32,000 inputs calling it overflowed the stack (the "stack-overflow in libheif" of stop 24).
private let fuzzBody = Mutex<FuzzBody?>(nil)

/// Hands control to libFuzzer (linked with `-sanitize=fuzzer`), which calls `body` with each input.
public func runFuzzer(_ body: @escaping @Sendable (Data) -> Void) -> Never {
    fuzzBody.withLock { $0 = FuzzBody(body) }
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzTestOneInput))
}

/// Runs the body `runFuzzer` was given on one input: the callback it hands libFuzzer's driver, and
/// libFuzzer's usual entry point. A debug build links libFuzzer's archive whole and keeps its
/// `main` object (release builds drop it with unused sections), which refers to this symbol;
/// `runFuzzer` still starts every run.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
    fuzzBody.withLock { $0 }?.run(data)
    return 0
}
