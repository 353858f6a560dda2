import Foundation

extension Data {
    /// `withUnsafeBytes` for closures with typed throws (the standard one rethrows `any Error`).
    func withBytes<Result>(
        _ body: (UnsafeRawBufferPointer) throws(CoderError) -> Result
    ) throws(CoderError)
        -> Result
    {
        let outcome: Swift.Result<Result, CoderError> = withUnsafeBytes { bytes in
            do throws(CoderError) {
                return .success(try body(bytes))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }
}
