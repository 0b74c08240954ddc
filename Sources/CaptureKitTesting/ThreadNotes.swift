import Foundation
import Synchronization

/// Kernel ids of the threads a test's doubles ran on, to check that a stop joined them: a
/// joined thread is gone from `/proc/self/task` at once.
///
/// With `lingers`, every noted thread also spends 50 ms exiting, in a thread-specific value's
/// destructor (as OpenCV's per-thread data is freed when a thread ends): a stop that only waits
/// for a thread's work to end (a semaphore its body signals) returns while the thread is still
/// listed, so the check fails on it every time, not only on a busy machine.
///
/// Threading: thread-safe.
public final class ThreadNotes: Sendable {
    private let ids = Mutex<Set<Int32>>([])
    public let lingers: Bool

    public init(lingers: Bool) { self.lingers = lingers }

    nonisolated(unsafe) private static let lingering: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { _ in usleep(50_000) }
        return key
    }()

    /// Notes the calling thread.
    public func noteCurrent() {
        if lingers { pthread_setspecific(Self.lingering, UnsafeRawPointer(bitPattern: 1)) }
        if let id = Self.currentKernelThreadID() { ids.withLock { _ = $0.insert(id) } }
    }

    /// Every thread noted.
    public var all: Set<Int32> { ids.withLock { $0 } }

    /// The noted threads the kernel still lists (not yet exited, or exited and not joined).
    public var alive: [Int32] {
        all.sorted().filter { FileManager.default.fileExists(atPath: "/proc/self/task/\($0)") }
    }

    /// The calling thread's kernel id, from the `/proc/thread-self` link ("PID/task/TID").
    public static func currentKernelThreadID() -> Int32? {
        guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self") else { return nil }
        return link.split(separator: "/").last.flatMap { Int32($0) }
    }
}
