import CaptureKitTesting
import Foundation
import Synchronization
import Testing

@testable import CaptureJobs

/// The thread App's long-running bodies run on (a serve camera, the retention sweeper): joined,
/// it has exited.
@Suite struct JoinedThreadTests {
    @Test func joinReturnsOnceTheBodyHasRunAndTheThreadHasExited() {
        let notes = ThreadNotes(lingers: true)
        let name = Mutex("")
        let ran = Mutex(false)
        let thread = JoinedThread(name: "cvcam.joined-thread-test") {
            notes.noteCurrent()
            name.withLock { $0 = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "" }
            usleep(20_000)
            ran.withLock { $0 = true }
        }
        thread.join()
        #expect(ran.withLock { $0 })
        #expect(notes.all.count == 1 && notes.all.first != ThreadNotes.currentKernelThreadID())
        #expect(notes.alive.isEmpty, "joined, the thread has exited (it lingered 50 ms)")
        // The kernel keeps 15 bytes of a name.
        #expect(name.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines) == "cvcam.joined-th")
        // A second join returns at once.
        thread.join()
    }
}
