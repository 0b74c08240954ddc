import Dispatch
import Foundation

/// Something that runs jobs one at a time, in the order given: a serial `DispatchQueue` or a
/// `WorkerThread`. `DeliveryMailbox` hands its items to one.
protocol SerialJobRunner: Sendable {
    func run(_ job: @escaping @Sendable () -> Void)
}

extension DispatchQueue: SerialJobRunner {
    func run(_ job: @escaping @Sendable () -> Void) { async(execute: job) }
}

/// A thread of its own that runs jobs one at a time, in the order given: a serial queue whose
/// thread never changes (a `pthread_create` thread waiting on an `NSCondition`). Also what a
/// single long job (a capture loop, a stream reader) runs on when its owner must join it.
///
/// Why not a serial `DispatchQueue`: its jobs run on whichever of libdispatch's pool threads is
/// free, and the pool starts another thread whenever every one it has is busy or blocked. When
/// the metadata output's detection job still blocked while waiting for its face job, a 30-minute
/// soak saw the thread count grow at a random moment, and each job's allocations went to the
/// malloc arena of whichever thread ran it. Detection on its own threads keeps the count fixed
/// from the first frame.
///
/// The thread (`pthread_create`) starts with the first job and is named `name` (see
/// `nameCurrentThread`). `stopAndJoin()` ends it once the jobs given before have run and joins
/// it (`pthread_join`), so a stopped session leaves no thread behind; the next job starts a new
/// one. Released without it, the worker's thread ends after its jobs, detached.
///
/// Threading: `run`, `waitUntilIdle` and `stopAndJoin` from any thread; the last two not from a
/// job of the same worker (they would wait for themselves; `stopAndJoin` then does nothing).
final class WorkerThread: SerialJobRunner, @unchecked Sendable {
    // @unchecked: all mutable state is in `Shared`, guarded by its condition.

    /// What the thread and the worker share; the thread holds this, not the worker, so that
    /// releasing the worker ends the thread.
    private final class Shared: @unchecked Sendable {
        let condition = NSCondition()
        var jobs: [@Sendable () -> Void] = []
        var closing = false
        var started = false
        /// A `stopAndJoin` is waiting for the thread.
        var joining = false
        /// The worker's thread, while it runs.
        var thread: pthread_t?
        /// Jobs handed to libdispatch because no thread could be created.
        let fallback = DispatchGroup()
        let name: String
        init(name: String) { self.name = name }
    }

    private let shared: Shared
    let name: String

    init(name: String) {
        self.name = name
        shared = Shared(name: name)
    }

    deinit {
        shared.condition.lock()
        shared.closing = true
        if let thread = shared.thread { pthread_detach(thread) }
        shared.condition.signal()
        shared.condition.unlock()
    }

    /// Queues `job`; it runs on the worker's thread after every job queued before it.
    func run(_ job: @escaping @Sendable () -> Void) {
        let shared = self.shared
        shared.condition.lock()
        defer { shared.condition.unlock() }
        shared.jobs.append(job)
        if !shared.started { Self.startThread(shared) }
        shared.condition.signal()
    }

    /// Whether the caller is this worker's thread (a wait for the worker's jobs from one of them
    /// would wait for itself).
    var isCurrentThread: Bool {
        shared.condition.lock()
        defer { shared.condition.unlock() }
        return shared.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
    }

    /// Ends the thread once every job queued before this call has run, and waits for it to exit.
    /// Does nothing when called from the worker's own thread. When no thread could be created,
    /// waits for the jobs libdispatch ran instead.
    func stopAndJoin() {
        let shared = self.shared
        shared.condition.lock()
        guard shared.started, !shared.joining, let thread = shared.thread, pthread_equal(thread, pthread_self()) == 0 else {
            let onOwnThread = shared.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
            shared.condition.unlock()
            if !onOwnThread { shared.fallback.wait() }
            return
        }
        shared.joining = true
        shared.closing = true
        shared.condition.signal()
        shared.condition.unlock()
        pthread_join(thread, nil)
        shared.condition.lock()
        defer { shared.condition.unlock() }
        shared.thread = nil
        shared.started = false
        shared.closing = false
        shared.joining = false
        // A job queued while the thread was ending gets a new thread.
        if !shared.jobs.isEmpty { Self.startThread(shared) }
    }

    /// Starts the thread; the caller holds the condition's lock.
    private static func startThread(_ shared: Shared) {
        shared.started = true
        var thread = pthread_t()
        let context = Unmanaged.passRetained(shared).toOpaque()
        let created = pthread_create(&thread, nil, { context in
            let shared = Unmanaged<Shared>.fromOpaque(context!).takeRetainedValue()
            WorkerThread.nameCurrentThread(shared.name)
            WorkerThread.loop(shared)
            return nil
        }, context)
        guard created == 0 else {
            // No thread (the process is at its limit): run the jobs on a dispatch queue instead
            // of losing them.
            Unmanaged<Shared>.fromOpaque(context).release()
            shared.started = false
            let jobs = shared.jobs
            shared.jobs.removeAll()
            DispatchQueue.global().async(group: shared.fallback) { for job in jobs { job() } }
            return
        }
        shared.thread = thread
    }

    /// Blocks until every job queued before this call has run.
    func waitUntilIdle() {
        let done = DispatchSemaphore(value: 0)
        run { done.signal() }
        done.wait()
    }

    /// Names the calling thread for `ps`, `/proc/self/task/*/comm` and debuggers: its first 15
    /// bytes (the kernel's limit), written to `/proc/thread-self/comm`. (`Thread.name` does
    /// not reach the kernel on Linux, and Swift's Glibc module does not declare
    /// `pthread_setname_np`.) Does nothing when /proc is not mounted.
    static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    private static func loop(_ shared: Shared) {
        while true {
            shared.condition.lock()
            while shared.jobs.isEmpty && !shared.closing { shared.condition.wait() }
            if shared.jobs.isEmpty {
                shared.condition.unlock()
                return
            }
            let job = shared.jobs.removeFirst()
            shared.condition.unlock()
            job()
        }
    }
}
