import CaptureKit
import CaptureKitTesting
import Foundation
import Synchronization
import Testing

@testable import CaptureJobs
@testable import CapturePreview
import AppTestSupport

/// The preview's stream on the real V4L2 path (libv4l2, mmap) in this process: only in the
/// emulator pass (`Tools/test` preloads the emulator and filters on `V4L2EmulatorTests`). Holds
/// the emulated camera so CaptureKitTests' V4L2EmulatorTests, running in parallel, never find it busy.
@Suite(
    .serialized, .emulatedCamera,
    .enabled(
        if: dlsym(nil, "v4l2_emulator_loaded") != nil,
        "the V4L2 emulator is not loaded; Tools/test runs these tests again with LD_PRELOAD=.build/debug/libV4L2Emulator.so"))
struct PreviewV4L2EmulatorTests {
    /// Keeps each sample's JPEG by its time, then hands the sample to the fan-out, as the
    /// preview's video output would.
    final class Tap: CaptureVideoDataOutputSampleBufferDelegate, Sendable {
        let fanOut: MJPEGFanOut
        let jpegs = Mutex<[MediaTime: Data?]>([:])

        init(_ fanOut: MJPEGFanOut) { self.fanOut = fanOut }

        func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
            jpegs.withLock { $0[sampleBuffer.presentationTimeStamp] = sampleBuffer.jpegData }
            fanOut.stream(sampleBuffer)
        }
    }

    @Test func streamedPartsAreTheSampleBuffersJPEGByteForByte() async throws {
        let device = try CaptureDevice(v4l2Path: "/dev/video-emulated0")
        let format = try #require(device.formats.first { $0.mediaSubType == "MJPG" && $0.dimensions.width == 1280 })
        try device.lockForConfiguration()
        try device.setActiveFormat(format)
        device.unlockForConfiguration()
        let fanOut = MJPEGFanOut(settings: .init(maximumSize: nil, quality: 70, framesPerSecond: 30))
        let tap = Tap(fanOut)
        let session = CaptureSession()
        session.beginConfiguration()
        try session.setSessionPreset(.inputPriority)
        try session.addInput(try CaptureDeviceInput(device: device))
        let output = CaptureVideoDataOutput()
        output.videoPixelFormat = .bgr  // as PreviewCamera asks
        output.setSampleBufferDelegate(tap, queue: DispatchQueue(label: "preview.emulator.test"))
        try session.addOutput(output)
        try session.commitConfiguration()
        let viewer = fanOut.frames()
        try session.startRunning()
        // Ends the viewer's stream if the camera stalls, so the test fails instead of hanging.
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(20))
            fanOut.finish()
        }
        defer { watchdog.cancel() }
        var checked = 0
        for await frame in viewer {
            let parts = MJPEGPart.parse(Array(frame.part.readableBytesView))
            let body = try #require(parts.first?.body)
            let kept = try #require(tap.jpegs.withLock { $0[frame.time] } ?? nil, "no JPEG on the sample at \(frame.time)")
            #expect(body == Array(kept))
            #expect(MJPEGPart.isWholeJPEG(body))
            #expect(MJPEGPart.jpegSize(body).map { [$0.width, $0.height] } == [1280, 720])
            checked += 1
            if checked == 8 { break }
        }
        try session.stopRunning()
        fanOut.finish()
        #expect(checked == 8)
        #expect(fanOut.encodedFrameCount == 0)
        #expect(fanOut.passedThroughFrameCount >= 8)
    }
}

/// Holds `ExclusiveAccess.emulatedCamera` while a suite runs (CaptureKitTests has the same trait
/// for its emulator suite: test targets cannot share test-only code).
struct EmulatedCameraAccess: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await ExclusiveAccess.emulatedCamera.run(function)
    }
}

extension Trait where Self == EmulatedCameraAccess {
    /// The suite holds the emulated camera for all its tests.
    static var emulatedCamera: Self { Self() }
}
