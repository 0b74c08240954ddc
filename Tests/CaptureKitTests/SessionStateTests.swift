import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

/// Every legal and illegal transition of `CaptureSession`'s state machine.
@Suite struct SessionStateTests {
    func endlessDevice() throws -> CaptureDevice {
        try CaptureDevice(syntheticScene: movingScene(frames: nil), pacing: .realTime)
    }

    func code(_ body: () throws -> Void) -> CaptureError.Code? {
        do {
            try body()
            return nil
        } catch let error as CaptureError {
            return error.code
        } catch {
            return nil
        }
    }

    @Test func startWithoutInputThrows() {
        let session = CaptureSession()
        #expect(code { try session.startRunning() } == .sessionHasNoInputs)
        #expect(session.runState == .stopped)
    }

    @Test func stopWhileStoppedThrows() {
        #expect(code { try CaptureSession().stopRunning() } == .sessionNotRunning)
    }

    @Test func stoppedRunningStoppedRunningStopped() throws {
        let session = CaptureSession()
        let log = EventLog(session)
        try session.addInput(try CaptureDeviceInput(device: endlessDevice()))
        try session.startRunning()
        #expect(session.isRunning)
        #expect(session.runState == .running)
        #expect(code { try session.startRunning() } == .sessionAlreadyRunning)
        try session.stopRunning()
        #expect(!session.isRunning)
        #expect(code { try session.stopRunning() } == .sessionNotRunning)
        // A stopped session starts again.
        try session.startRunning()
        #expect(session.isRunning)
        try session.stopRunning()
        #expect(
            log.events(count: 4).filter { $0.hasPrefix("did") }
                == ["didStartRunning", "didStopRunning", "didStartRunning", "didStopRunning"])
    }

    @Test func configurationBlocksNestAndBalance() throws {
        let session = CaptureSession()
        #expect(code { try session.commitConfiguration() } == .unbalancedCommitConfiguration)
        session.beginConfiguration()
        session.beginConfiguration()
        try session.addInput(try CaptureDeviceInput(device: endlessDevice()))
        #expect(code { try session.startRunning() } == .sessionIsConfiguring)
        try session.commitConfiguration()
        #expect(code { try session.startRunning() } == .sessionIsConfiguring)
        try session.commitConfiguration()
        #expect(code { try session.commitConfiguration() } == .unbalancedCommitConfiguration)
        try session.startRunning()
        try session.stopRunning()
    }

    @Test func changesWhileRunningNeedAConfigurationBlock() throws {
        let session = CaptureSession()
        let input = try CaptureDeviceInput(device: endlessDevice())
        try session.addInput(input)
        let first = CaptureVideoDataOutput()
        try session.addOutput(first)
        try session.startRunning()
        defer { try? session.stopRunning() }

        let second = CaptureVideoDataOutput()
        let recorder = FrameRecorder()
        second.setSampleBufferDelegate(recorder, queue: DispatchQueue(label: "second"))
        #expect(code { try session.addOutput(second) } == .configurationRequiresBeginConfiguration)
        #expect(code { try session.removeOutput(first) } == .configurationRequiresBeginConfiguration)
        #expect(code { try session.removeInput(input) } == .configurationRequiresBeginConfiguration)

        // Inside a block the change is applied at the commit, and frames reach the new output.
        session.beginConfiguration()
        try session.addOutput(second)
        try session.removeOutput(first)
        try session.commitConfiguration()
        #expect(session.isRunning)
        let deadline = Date().addingTimeInterval(5)
        while recorder.frames.isEmpty && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(!recorder.frames.isEmpty)
        #expect(session.outputs.count == 1)
    }

    @Test func inputsAndOutputsAreAddedOnce() throws {
        let session = CaptureSession()
        let input = try CaptureDeviceInput(device: endlessDevice())
        try session.addInput(input)
        #expect(!session.canAddInput(input))
        #expect(code { try session.addInput(input) } == .inputAlreadyAdded)
        let other = try CaptureDeviceInput(device: endlessDevice())
        #expect(code { try session.addInput(other) } == .inputLimitReached)
        // Another session cannot take an input this one owns.
        #expect(code { try CaptureSession().addInput(input) } == .inputAlreadyAdded)

        let output = CaptureVideoDataOutput()
        try session.addOutput(output)
        #expect(code { try session.addOutput(output) } == .outputAlreadyAdded)
        #expect(output.connections.count == 1)
        #expect(output.connection(with: .video)?.inputID == input.id)

        try session.removeInput(input)
        #expect(output.connections.isEmpty)
        #expect(code { try session.removeInput(input) } == .inputNotInSession)
        try session.removeOutput(output)
        #expect(code { try session.removeOutput(output) } == .outputNotInSession)
        // Once removed, it can be added again.
        try session.addInput(input)
        try session.addOutput(output)
        #expect(output.connections.count == 1)
    }

    @Test func removingTheRunningInputStopsTheSession() throws {
        let session = CaptureSession()
        let input = try CaptureDeviceInput(device: endlessDevice())
        try session.addInput(input)
        try session.startRunning()
        session.beginConfiguration()
        try session.removeInput(input)
        try session.commitConfiguration()
        #expect(session.runState == .stopped)
    }

    @Test func presetsResolveAgainstTheInputsFormats() throws {
        var scene = movingScene(width: 1280, height: 720, frames: nil)
        scene.additionalSizes = [.init(width: 640, height: 480), .init(width: 1920, height: 1080)]
        let device = try CaptureDevice(syntheticScene: scene)
        #expect(SessionPreset.high.format(for: device)?.dimensions == .init(width: 1920, height: 1080))
        #expect(SessionPreset.low.format(for: device)?.dimensions == .init(width: 640, height: 480))
        #expect(SessionPreset.medium.format(for: device)?.dimensions == .init(width: 640, height: 480))
        #expect(SessionPreset.hd1280x720.format(for: device)?.dimensions == .init(width: 1280, height: 720))
        #expect(SessionPreset.hd4K3840x2160.format(for: device) == nil)

        let recorder = FrameRecorder()
        let (s, _) = try makeSession(device: device, recorder: recorder)
        try s.setSessionPreset(.hd1280x720)
        #expect(device.activeFormat.dimensions == .init(width: 1280, height: 720))
        #expect(!s.canSetSessionPreset(.hd4K3840x2160))
        #expect(code { try s.setSessionPreset(.hd4K3840x2160) } == .presetNotSupported)
        #expect(s.sessionPreset == .hd1280x720)
        try s.setSessionPreset(.low)
        try s.startRunning()
        let deadline = Date().addingTimeInterval(5)
        while recorder.frames.isEmpty && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        try s.stopRunning()
        #expect(recorder.frames.first?.width == 640)
        #expect(recorder.frames.first?.height == 480)
    }

    @Test func devicesChangeOnlyUnderTheConfigurationLock() throws {
        var scene = movingScene(frames: nil)
        scene.additionalSizes = [.init(width: 640, height: 480)]
        let device = try CaptureDevice(syntheticScene: scene)
        let vga = device.formats[1]
        #expect(code { try device.setActiveFormat(vga) } == .deviceNotLockedForConfiguration)
        try device.lockForConfiguration()
        try device.setActiveFormat(vga)
        #expect(device.activeFormat == vga)
        #expect(code { try device.setActiveVideoMinFrameDuration(MediaTime(value: 1, timescale: 240)) } == .frameDurationNotSupported)
        let other = CaptureDevice.Format(
            mediaSubType: "XXXX", pixelFormat: .bgr, dimensions: .init(width: 7, height: 7),
            videoSupportedFrameRateRanges: [.init(framesPerSecond: 5)])
        #expect(code { try device.setActiveFormat(other) } == .formatNotSupported)
        device.unlockForConfiguration()
        #expect(!device.isLockedForConfiguration)
        #expect(code { try device.setActiveVideoMinFrameDuration(MediaTime(value: 1, timescale: 30)) } == .deviceNotLockedForConfiguration)
    }
}
