@_spi(WebImageInternals) import WebImageCoders

/// Runs a callback-based operation as `async`, tying Swift task cancellation to the operation.
///
/// `start` gets the continuation (resume it exactly once) and returns the operation's handle;
/// cancelling the task calls `cancel(handle)`, at once if the task was cancelled before `start`
/// returned. The cancelled operation must still resume the continuation (with its `cancelled`
/// outcome) so the caller never hangs.
func withCancellableCallback<Handle: Sendable, Value: Sendable>(
    start: (HandOffContinuation<Value, Never>) -> Handle?,
    cancel: @escaping @Sendable (Handle) -> Void
) async -> Value {
    let holder = Protected<(handle: Handle?, cancelled: Bool)>((nil, false))
    return await withTaskCancellationHandler {
        await withHandOffContinuation { continuation in
            let handle = start(continuation)
            let cancelled = holder.withLock { state in
                state.handle = handle
                return state.cancelled
            }
            if cancelled, let handle { cancel(handle) }
        }
    } onCancel: {
        let handle = holder.withLock { state in
            state.cancelled = true
            return state.handle
        }
        if let handle { cancel(handle) }
    }
}
