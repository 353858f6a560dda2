import Foundation

/// Forwards a task's events to its own delegate and the session's: both hear every event; for
/// decisions the task's delegate answers when it has one.
final class CombinedTaskDelegate: HTTPSessionTaskDelegate {
    let taskDelegate: (any HTTPSessionTaskDelegate)?
    let sessionDelegate: any HTTPSessionTaskDelegate

    init(task: (any HTTPSessionTaskDelegate)?, session: any HTTPSessionTaskDelegate) {
        taskDelegate = task
        sessionDelegate = session
    }

    func task(_ task: HTTPSessionTask, didReceive response: HTTPSession.Response) async -> HTTPResponseDisposition {
        let sessionAnswer = await sessionDelegate.task(task, didReceive: response)
        guard let taskDelegate else { return sessionAnswer }
        let taskAnswer = await taskDelegate.task(task, didReceive: response)
        return taskAnswer == .cancel || sessionAnswer == .cancel ? .cancel : .allow
    }

    func task(_ task: HTTPSessionTask, didReceive data: Data) {
        sessionDelegate.task(task, didReceive: data)
        taskDelegate?.task(task, didReceive: data)
    }

    func task(
        _ task: HTTPSessionTask,
        willPerformRedirection response: HTTPSession.Response,
        newRequest: HTTPSession.Request
    ) async -> HTTPSession.Request? {
        guard let taskDelegate else {
            return await sessionDelegate.task(task, willPerformRedirection: response, newRequest: newRequest)
        }
        return await taskDelegate.task(task, willPerformRedirection: response, newRequest: newRequest)
    }

    func task(
        _ task: HTTPSessionTask,
        didReceiveChallenge challenge: HTTPAuthenticationChallenge
    ) async
        -> HTTPCredential?
    {
        guard let taskDelegate else { return await sessionDelegate.task(task, didReceiveChallenge: challenge) }
        return await taskDelegate.task(task, didReceiveChallenge: challenge)
    }

    func task(_ task: HTTPSessionTask, willCacheResponse proposed: HTTPCachedResponse) -> HTTPCachedResponse? {
        guard let taskDelegate else { return sessionDelegate.task(task, willCacheResponse: proposed) }
        return taskDelegate.task(task, willCacheResponse: proposed)
    }

    func task(_ task: HTTPSessionTask, didCompleteWith error: HTTPSessionError?, metrics: HTTPTaskMetrics) {
        sessionDelegate.task(task, didCompleteWith: error, metrics: metrics)
        taskDelegate?.task(task, didCompleteWith: error, metrics: metrics)
    }
}
