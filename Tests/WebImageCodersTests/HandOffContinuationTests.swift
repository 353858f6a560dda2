import Foundation
import Testing
@_spi(WebImageInternals) import WebImageCoders

@Suite("Hand-over continuations")
struct HandOffContinuationTests {
    @Test("A second resume traps, naming the hand-over")
    func secondResumeTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let value = await withHandOffContinuation { (continuation: HandOffContinuation<Int, Never>) in
                continuation.resume(returning: 1)
                continuation.resume(returning: 2)
            }
            FileHandle.standardError.write(Data("returned \(value)".utf8))
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("HandOffContinuation resumed more than once"), "\(message)")
        #expect(!message.contains("returned"))
    }

    @Test("One resume hands the value over, and a throwing one the error")
    func oneResume() async throws {
        let value = await withHandOffContinuation { (continuation: HandOffContinuation<Int, Never>) in
            continuation.resume(returning: 7)
        }
        #expect(value == 7)
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await withThrowingHandOffContinuation { (continuation: HandOffContinuation<Int, any Error>) in
                continuation.resume(with: .failure(Refused()))
            }
        }
    }
}
