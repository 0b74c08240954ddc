import Dispatch
import Foundation

/// A thread for one long-running body (a camera's loop, the retention sweeper) that its owner
/// joins: `pthread_create`, then `pthread_join` in `join()`. `Foundation.Thread` cannot be
/// joined; waiting for a semaphore its body signals returns while the thread is still exiting
/// (running its thread-specific data's destructors, OpenCV's among them), and `exit()` running
/// the libraries' destructors beside that crashes the process.
///
/// The kernel sees the thread under `name`'s first 15 bytes (`/proc/thread-self/comm`). When
/// no thread can be created (the process is at its limit), the body runs on libdispatch and
/// `join()` waits for it there.
///
/// Threading: `join` from any thread but the body's own (there it returns at once), as often
/// as wanted; the body runs once.
package final class JoinedThread: @unchecked Sendable {
    // @unchecked: `thread` is written once, in init, before the instance is shared; `joined`
    // under `lock`.
    private var thread: pthread_t?
    private let fallback = DispatchGroup()
    private let lock = NSLock()
    private var joined = false

    /// Starts `body` on a thread of its own named `name`.
    package init(name: String, body: @escaping @Sendable () -> Void) {
        final class Start {
            let name: String
            let body: @Sendable () -> Void
            init(name: String, body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var created = pthread_t()
        let status = pthread_create(&created, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            JoinedThread.nameCurrentThread(start.name)
            start.body()
            return nil
        }, start)
        if status == 0 {
            thread = created
        } else {
            Unmanaged<Start>.fromOpaque(start).release()
            DispatchQueue.global().async(group: fallback, execute: body)
        }
    }

    /// Waits for the body to return and the thread to exit.
    package func join() {
        guard let thread else {
            fallback.wait()
            return
        }
        if pthread_equal(thread, pthread_self()) != 0 { return }
        lock.lock()
        defer { lock.unlock() }
        guard !joined else { return }
        pthread_join(thread, nil)
        joined = true
    }

    deinit {
        // Never joined: let it end on its own.
        if let thread, !joined { pthread_detach(thread) }
    }

    /// Names the calling thread for `ps` and `/proc/self/task/*/comm` (Swift's Glibc module does
    /// not declare `pthread_setname_np`). Does nothing when /proc is not mounted.
    package static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
