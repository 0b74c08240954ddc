import CaptureKit
import CaptureKitTesting
import Foundation
import Synchronization
import Testing

/// Slow consumers never stall capture: drops are counted and reported; without discarding,
/// nothing is lost.
@Suite struct DeliveryTests {
    @Test func slowDelegateCausesCountedReportedDropsAndNoStall() throws {
        // 45 frames at 30 fps, paced like a camera (1.5 s); the delegate takes 100 ms a frame.
        let device = try CaptureDevice(syntheticScene: movingScene(fps: 30, frames: 45), pacing: .realTime)
        let recorder = FrameRecorder(delay: 0.1)
        let (session, output) = try makeSession(device: device, recorder: recorder, discardsLate: true)
        let start = monotonicSeconds()
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 20))
        let elapsed = monotonicSeconds() - start
        // Capture kept its pace: a capture that waited for the delegate would need 45 × 0.1 s.
        #expect(elapsed < 4.4, "capture stalled: \(elapsed) s")
        // Wait for the last reports to arrive on the delegate queue.
        Thread.sleep(forTimeInterval: 0.3)
        let delivered = recorder.frames.count
        let drops = recorder.drops
        #expect(delivered + drops.count == 45, "delivered \(delivered), dropped \(drops.count)")
        #expect(drops.count >= 20, "a 100 ms consumer at 30 fps must drop most frames, dropped \(drops.count)")
        #expect(drops.allSatisfy { $0 == .frameWasLate })
        #expect(output.droppedFrameCount == drops.count)
        #expect(output.droppedFrameCounts[.frameWasLate] == drops.count)
        #expect(output.deliveredFrameCount == delivered)
        // Latest wins: the frames delivered are in capture order and include the last one.
        let sequence = recorder.frames.map(\.sequenceNumber)
        #expect(sequence == sequence.sorted())
        #expect(sequence.last == 44)
    }

    @Test func withoutDiscardingNoFrameIsLost() throws {
        let device = try CaptureDevice(syntheticScene: movingScene(fps: 30, frames: 40), pacing: .asFastAsPossible)
        let recorder = FrameRecorder(delay: 0.01)
        let (session, output) = try makeSession(device: device, recorder: recorder, discardsLate: false)
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 20))
        #expect(recorder.frames.map(\.sequenceNumber) == Array(0..<40))
        #expect(recorder.drops.isEmpty)
        #expect(output.droppedFrameCount == 0)
    }

    @Test func aLiveSourceThatOutrunsAQueueDropsOutOfBuffers() throws {
        let source = ScriptedLiveSource(frames: 60, interval: 0.002)
        let device = try CaptureDevice(
            uniqueID: "scripted", localizedName: "Scripted camera", deviceType: .external, source: source)
        let recorder = FrameRecorder(delay: 0.02)
        let session = CaptureSession()
        try session.addInput(try CaptureDeviceInput(device: device))
        let output = CaptureVideoDataOutput(maximumQueuedFrames: 4)
        output.alwaysDiscardsLateVideoFrames = false
        output.setSampleBufferDelegate(recorder, queue: DispatchQueue(label: "slow"))
        try session.addOutput(output)
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 20))
        Thread.sleep(forTimeInterval: 0.2)
        #expect(recorder.drops.contains(.outOfBuffers))
        #expect(recorder.frames.count + recorder.drops.count == 60)
    }

    @Test func gapsInTheSourcesSequenceAreReportedAsDiscontinuities() throws {
        let source = ScriptedLiveSource(frames: 10, interval: 0.001, skipping: [3, 4, 7])
        let device = try CaptureDevice(uniqueID: "gappy", localizedName: "Gappy", deviceType: .external, source: source)
        let recorder = FrameRecorder()
        let (session, _) = try makeSession(device: device, recorder: recorder, discardsLate: false)
        try session.startRunning()
        session.waitUntilStopped(timeout: 10)
        Thread.sleep(forTimeInterval: 0.1)
        #expect(recorder.frames.map(\.sequenceNumber) == [0, 1, 2, 5, 6, 8, 9])
        #expect(recorder.drops == [.discontinuity, .discontinuity, .discontinuity])
    }

    @Test func aLostDeviceInterruptsAndResumes() throws {
        let source = ScriptedLiveSource(frames: nil, interval: 0.005, disconnectAfter: 5)
        let device = try CaptureDevice(uniqueID: "flaky", localizedName: "Flaky", deviceType: .external, source: source)
        let recorder = FrameRecorder()
        let (session, _) = try makeSession(device: device, recorder: recorder)
        let log = EventLog(session)
        try session.startRunning()
        let events = log.events(waitingFor: "interruptionEnded", timeout: 10)
        #expect(events.contains { $0.hasPrefix("wasInterrupted(deviceDisconnected") })
        #expect(events.last == "interruptionEnded")
        #expect(session.isRunning)
        try session.stopRunning()
        #expect(source.openCount.withLock { $0 } >= 2)
    }
}
