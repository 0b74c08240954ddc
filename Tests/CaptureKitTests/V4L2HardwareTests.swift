import CaptureKit
import CaptureKitTesting
import Dispatch
import Foundation
import Synchronization
import Testing

/// Real cameras, when the machine has one (skipped otherwise, and under the emulator, which
/// only adds nodes outside /dev/video*).
enum V4L2Hardware {
    static let cameras: [CaptureDevice] = {
        var system = V4L2SystemCalls.live
        let live = V4L2SystemCalls.live
        system.access = { path, mode in path.hasPrefix("/dev/video-emulated") ? -1 : live.access(path, mode) }
        return V4L2Discovery.devices(system: system).filter {
            ($0.source.capabilities?.devicePath.hasPrefix("/dev/video-emulated")) == false
        }
    }()
}

@Suite(.enabled(if: !V4L2Hardware.cameras.isEmpty, "no V4L2 camera on this machine"))
struct V4L2HardwareTests {
    @Test func aRealCameraDeliversFramesOfItsActiveFormat() throws {
        let device = try #require(V4L2Hardware.cameras.first)
        let session = CaptureSession()
        try session.addInput(try CaptureDeviceInput(device: device))
        let output = CaptureVideoDataOutput()
        let collector = FrameRecorder()
        output.setSampleBufferDelegate(collector, queue: DispatchQueue(label: "v4l2.hardware"))
        try session.addOutput(output)
        try session.startRunning()
        let frames = collector.wait(for: 5)
        try session.stopRunning()
        let granted = try #require(device.lastNegotiation?.granted)
        #expect(frames.count >= 5)
        #expect(frames.allSatisfy { $0.width == granted.width && $0.height == granted.height && $0.pixelFormat == .bgr })
        #expect(!(try device.v4l2Report().formats.isEmpty))
    }
}

/// Failures injected through the syscall seam, without any device.
struct V4L2SeamTests {
    private func failingOpen(_ code: Int32) -> V4L2SystemCalls {
        var system = V4L2SystemCalls.live
        system.openDevice = { _ in
            errno = code
            return -1
        }
        return system
    }

    @Test(arguments: [
        (EACCES, CaptureError.Code.permissionDenied), (EBUSY, .deviceBusy), (ENOENT, .deviceDisconnected),
        (ENODEV, .deviceDisconnected), (EIO, .deviceFailure),
    ])
    func openErrorsBecomeTheirCodes(errorNumber: Int32, code: CaptureError.Code) {
        do {
            _ = try CaptureDevice(v4l2Path: "/dev/video99", system: failingOpen(errorNumber))
            Issue.record("opening succeeded")
        } catch {
            #expect(error.code == code)
            #expect(error.errno == errorNumber)
            #expect(error.path == "/dev/video99")
            #expect(error.message.contains("open on /dev/video99"))
        }
    }

    @Test func interruptedOpensAreRetried() {
        var system = V4L2SystemCalls.live
        let attempts = Mutex(0)
        system.openDevice = { _ in
            let n = attempts.withLock { $0 += 1; return $0 }
            errno = n < 3 ? EINTR : EACCES
            return -1
        }
        #expect(throws: CaptureError.self) { try CaptureDevice(v4l2Path: "/dev/video99", system: system) }
        #expect(attempts.withLock { $0 } == 3)
    }

    @Test func v4l2ErrorNamesTheOperationAndErrno() {
        let error = V4L2Error(.dequeueBuffer, errno: EAGAIN, path: "/dev/video0")
        #expect(error.description.contains("VIDIOC_DQBUF on /dev/video0 failed"))
        #expect(error.captureError.code == .deviceFailure)
        #expect(V4L2Error(.setControl, errno: EACCES, path: "/dev/video0").captureError.code == .settingInactive)
        #expect(V4L2Error(.open, errno: EACCES, path: "/dev/video0").captureError.message.contains("`video` group"))
    }

    @Test func authorizationWithoutNodesIsNotDetermined() {
        var system = V4L2SystemCalls.live
        system.listDirectory = { _ in [] }
        system.access = { _, _ in -1 }
        #expect(CaptureDevice.authorizationStatus(for: .video, system: system) == .notDetermined)
    }
}
