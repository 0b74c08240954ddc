import CaptureKitTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CaptureKit
@testable import CaptureVision

/// The dedicated threads detection runs on, instead of libdispatch's pool.
@Suite struct WorkerThreadTests {
    /// This thread's kernel id and name, from /proc/thread-self (a link to "<pid>/task/<tid>").
    static func currentThread() -> (tid: String, name: String) {
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return (String(link.split(separator: "/").last ?? ""), name.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func jobsRunInOrderOnOneThreadThatCarriesTheName() {
        let worker = WorkerThread(name: "cvcam.test-worker-long-name")
        let seen = Mutex<[(Int, String, String)]>([])
        for n in 0..<200 {
            worker.run {
                let t = Self.currentThread()
                seen.withLock { $0.append((n, t.tid, t.name)) }
            }
        }
        worker.waitUntilIdle()
        let all = seen.withLock { $0 }
        #expect(all.map(\.0) == Array(0..<200))
        #expect(Set(all.map(\.1)).count == 1)
        #expect(all.first?.1 != Self.currentThread().tid)
        // The kernel keeps 15 bytes of a name.
        #expect(all.first?.2 == "cvcam.test-work")
    }

    @Test func theThreadEndsOnceTheWorkerIsReleasedAndItsJobsHaveRun() throws {
        var worker: WorkerThread? = WorkerThread(name: "cvcam.ending")
        let tid = Mutex("")
        let ran = Mutex(0)
        worker!.run { tid.withLock { $0 = Self.currentThread().tid } }
        worker!.waitUntilIdle()
        let id = tid.withLock { $0 }
        #expect(!id.isEmpty)
        #expect(FileManager.default.fileExists(atPath: "/proc/self/task/\(id)"))
        // Jobs still queued when the worker goes run first.
        let gate = DispatchSemaphore(value: 0)
        worker!.run { gate.wait() }
        for _ in 0..<5 { worker!.run { ran.withLock { $0 += 1 } } }
        worker = nil
        gate.signal()
        // Wait (bounded) for the thread to go; the bound is generous, not a timing claim.
        var gone = false
        for _ in 0..<500 where !gone {
            gone = !FileManager.default.fileExists(atPath: "/proc/self/task/\(id)")
            if !gone { usleep(10_000) }
        }
        #expect(gone)
        #expect(ran.withLock { $0 } == 5)
    }

    @Test func stopAndJoinReturnsOnceTheThreadHasExited() {
        let worker = WorkerThread(name: "cvcam.joined")
        let notes = ThreadNotes(lingers: true)
        worker.run { notes.noteCurrent() }
        worker.waitUntilIdle()
        #expect(notes.all.count == 1)
        worker.stopAndJoin()
        // With no wait: joined means gone from the kernel's list (the thread lingered 50 ms).
        #expect(notes.alive.isEmpty)
        // The next job gets a new thread, joined in its turn.
        worker.run { notes.noteCurrent() }
        worker.stopAndJoin()
        #expect(notes.all.count == 2 && notes.alive.isEmpty)
    }

    /// A metadata output runs its face stage on one thread of its own for every frame (not on
    /// whichever pool thread is free).
    @Test func theFaceStageRunsOnOneNamedThreadForEveryFrame() throws {
        let names = Mutex<Set<String>>([])
        let tids = Mutex<Set<String>>([])
        let stage = ThreadRecordingFaceStage { name, tid in
            names.withLock { _ = $0.insert(name) }
            tids.withLock { _ = $0.insert(tid) }
        }
        let output = CaptureMetadataOutput(faceStage: stage, codeStage: nil)
        try output.setMetadataObjectTypes([.face])
        let scene = SyntheticScene(
            size: .init(width: 320, height: 240), frameRate: 30, frameCount: 40,
            background: .color(red: 90, green: 90, blue: 90))
        let session = CaptureSession()
        let device = try CaptureDevice(
            uniqueID: "worker-test", localizedName: "Worker test", deviceType: .synthetic,
            source: try SyntheticCameraSource(scene: scene, pacing: .asFastAsPossible))
        try session.addInput(try CaptureDeviceInput(device: device))
        try session.addOutput(output)
        try session.startRunning()
        session.waitUntilStopped()
        output.waitUntilIdle()
        #expect(output.processedFrameCount == 40)
        #expect(names.withLock { $0 } == ["cvcam.faces"])
        #expect(tids.withLock { $0 }.count == 1)
    }
}

/// A face stage that finds nothing and records which thread each frame ran on.
private final class ThreadRecordingFaceStage: FaceMetadataStage, @unchecked Sendable {
    // @unchecked: `record` is a Sendable closure; no other state.
    let record: @Sendable (String, String) -> Void
    init(record: @escaping @Sendable (String, String) -> Void) { self.record = record }
    var isAvailable: Bool { true }
    func process(
        _ frame: AnalysisFrame, regionOfInterest: CGRect, updateInterval: Double, scanInterval: Double
    ) throws(CaptureError) -> (faces: [MetadataFaceObject], events: [MetadataEvent]) {
        let t = WorkerThreadTests.currentThread()
        record(t.name, t.tid)
        return ([], [])
    }
    func finish() -> [MetadataEvent] { [] }
}
