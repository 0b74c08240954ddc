import Foundation
import Synchronization

/// SIGINT and SIGTERM, handed to one registered Swift handler on a thread of their own.
///
/// A `sigaction` handler, run by whichever thread the kernel picks, only `write`s the signal's
/// number to a pipe (async-signal-safe); the `cvcam.signals` thread reads the pipe and calls the
/// registered handler. A dispatch signal source is not used: it sets the signal to `SIG_IGN`
/// and reads a `signalfd`, which sees only signals that every thread blocks, so a signal the
/// kernel gave to a capture, OpenCV or TBB thread was ignored and the run never stopped.
///
/// A signal that comes while no handler is registered (between two inputs of one run) is kept
/// and given to the next handler registered.
///
/// Threading: `register` and `unregister` from any thread; the handler runs on the
/// `cvcam.signals` thread, one signal at a time, so it must not block (hand long work off).
package enum StopSignals {
    package typealias Handler = @Sendable (Int32) -> Void

    private struct State {
        var installed = false
        var handler: Handler?
        var pending: Int32?
    }

    private static let state = Mutex(State())
    /// The pipe's write end, read by the C handler: set once, before any handler is installed.
    nonisolated(unsafe) private static var writeEnd: Int32 = -1

    /// Makes `handler` the one that receives SIGINT and SIGTERM from now on (installing the
    /// process's handlers the first time), and unblocks both signals on the calling thread (a
    /// parent may start cvcam with them blocked). A signal kept from before is given to it at once.
    package static func register(_ handler: @escaping Handler) {
        installOnce()
        let pending = state.withLock { s -> Int32? in
            s.handler = handler
            defer { s.pending = nil }
            return s.pending
        }
        if let pending { DispatchQueue.global().async { handler(pending) } }
        var stopping = sigset_t()
        sigemptyset(&stopping)
        sigaddset(&stopping, SIGINT)
        sigaddset(&stopping, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &stopping, nil)
    }

    /// Removes the handler; signals from now on are kept for the next one.
    package static func unregister() {
        state.withLock { $0.handler = nil }
    }

    private static func installOnce() {
        let first = state.withLock { s -> Bool in
            defer { s.installed = true }
            return !s.installed
        }
        guard first else { return }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            // No pipe (no descriptors left): the default action still ends the process.
            return
        }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        writeEnd = fds[1]
        let readEnd = fds[0]
        let reader = Thread {
            var byte: UInt8 = 0
            while true {
                let n = read(readEnd, &byte, 1)
                if n < 0 && errno == EINTR { continue }
                guard n == 1 else { return }
                let sig = Int32(byte)
                let handler = state.withLock { s -> Handler? in
                    if s.handler == nil { s.pending = sig }
                    return s.handler
                }
                handler?(sig)
            }
        }
        reader.name = "cvcam.signals"
        reader.start()
        for sig in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { sig in
                let saved = errno
                var byte = UInt8(truncatingIfNeeded: sig)
                _ = write(StopSignals.writeEnd, &byte, 1)
                errno = saved
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(sig, &action, nil)
        }
    }
}
