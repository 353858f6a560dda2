#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The calling thread's scheduling policy and priority, to put back after a library changes
/// them. SVT-AV1 1.4 (Debian 12's, reached through libavif) switches the thread that creates its
/// encoder to `SCHED_FIFO` at priority 99 whenever it may (as root, as in most containers) and
/// never switches it back: a worker thread of the proxy or of Swift's cooperative pool would run
/// every later job in real time, starving the other threads and the processes it starts (they
/// inherit the policy). Saved before an AVIF encode and restored after it, on every path.
struct ThreadScheduling {
    private var policy: Int32 = 0
    private var parameters = sched_param()
    private let saved: Bool

    /// The calling thread's current scheduling.
    init() {
        saved = pthread_getschedparam(pthread_self(), &policy, &parameters) == 0
    }

    /// Puts the saved scheduling back on the calling thread, when something changed it.
    func restore() {
        guard saved else { return }
        var currentPolicy: Int32 = 0
        var current = sched_param()
        guard pthread_getschedparam(pthread_self(), &currentPolicy, &current) == 0,
            currentPolicy != policy || current.sched_priority != parameters.sched_priority
        else { return }
        var original = parameters
        _ = pthread_setschedparam(pthread_self(), policy, &original)
    }
}
