import CaptureKit
import CaptureKitTesting
import Foundation
import Synchronization
import Testing

/// AVFoundation's spellings where nothing on Linux stops them (issue #32, rows 1-3, 14, 15, 18 of
/// the port's table): settable properties, delegate requirements with AVFoundation's parameter
/// types, a `didDrop` that is called, a preview layer made empty and given a session and a frame.
/// The device properties (row 6) are checked against the emulated camera
/// (V4L2EmulatorTests.PointsOfInterest).
@Suite struct AVFoundationSpellingTests {
    // MARK: Session (row 2)

    @Test func theSessionPresetIsAProperty() throws {
        let scene = SyntheticScene(
            size: .init(width: 1280, height: 720), frameRate: 30, frameCount: 30, additionalSizes: [.init(width: 640, height: 480)])
        let device = try CaptureDevice(syntheticScene: scene)
        let session = CaptureSession()
        session.beginConfiguration()
        session.sessionPreset = .high
        try session.addInput(CaptureDeviceInput(device: device))
        try session.commitConfiguration()
        #expect(device.activeFormat.dimensions == .init(width: 1280, height: 720))
        #expect(session.canSetSessionPreset(.vga640x480) && !session.canSetSessionPreset(.hd1920x1080))
        session.sessionPreset = .vga640x480
        #expect(session.sessionPreset == .vga640x480)
        #expect(device.activeFormat.dimensions == .init(width: 640, height: 480))
    }

    // MARK: Metadata output (row 3)

    @Test func metadataObjectTypesIsAProperty() throws {
        let output = CaptureMetadataOutput()
        output.metadataObjectTypes = [.qr, .face]
        #expect(output.metadataObjectTypes == [.qr, .face])
        output.metadataObjectTypes = []
        #expect(output.metadataObjectTypes.isEmpty)
    }

    // MARK: Video data delegate (rows 14, 18)

    /// A delegate written exactly as for AVFoundation: `CaptureOutput` as the first parameter
    /// and `captureOutput(_:didDrop:from:)` without a reason — which is called, once per drop,
    /// with the reason on the buffer.
    final class AVFoundationStyleDelegate: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
        // @unchecked: the counters are Mutexes.
        let delivered = Mutex(0)
        let dropped = Mutex<[SampleBuffer]>([])
        let outputs = Mutex<[ObjectIdentifier]>([])
        func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
            outputs.withLock { $0.append(ObjectIdentifier(output)) }
            delivered.withLock { $0 += 1 }
            Thread.sleep(forTimeInterval: 0.02)  // a slow consumer: later frames are dropped
        }
        func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
            dropped.withLock { $0.append(sampleBuffer) }
        }
    }

    @Test func didDropIsCalledWithTheReasonOnTheBuffer() throws {
        let delegate = AVFoundationStyleDelegate()
        let session = CaptureSession()
        let device = try CaptureDevice(syntheticScene: movingScene(fps: 200, frames: 100), pacing: .realTime)
        try session.addInput(CaptureDeviceInput(device: device))
        let output = CaptureVideoDataOutput()
        let queue = DispatchQueue(label: "delegate")
        output.setSampleBufferDelegate(delegate, queue: queue)
        try session.addOutput(output)
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 60))
        queue.sync {}
        let drops = delegate.dropped.withLock { $0 }
        // A consumer slower than the source loses frames; each comes with its reason, late
        // frames with their pixels.
        let late = drops.filter { $0.droppedFrameReason == .frameWasLate }
        #expect(!late.isEmpty && late.allSatisfy { $0.width == 320 })
        #expect(drops.allSatisfy { $0.droppedFrameReason != nil })
        #expect(drops.count == output.droppedFrameCount)
        #expect(delegate.delivered.withLock { $0 } + drops.count == 100)
        #expect(delegate.outputs.withLock { $0 }.allSatisfy { $0 == ObjectIdentifier(output) })
    }

    @Test func framesASourceNeverProducedComeAsBuffersWithoutPixels() throws {
        let source = ScriptedLiveSource(frames: 10, interval: 0.001, skipping: [3, 4, 7])
        let device = try CaptureDevice(uniqueID: "gappy", localizedName: "Gappy", deviceType: .external, source: source)
        let recorder = FrameRecorder()
        let (session, _) = try makeSession(device: device, recorder: recorder, discardsLate: false)
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 20))
        let deadline = Date(timeIntervalSinceNow: 20)
        while recorder.droppedSampleBuffers.count < 3 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let skipped = recorder.droppedSampleBuffers
        #expect(skipped.map(\.sequenceNumber) == [3, 4, 7])
        #expect(skipped.allSatisfy { $0.droppedFrameReason == .discontinuity && $0.width == 0 && $0.height == 0 })
        // Times estimated back from the next frame, one frame duration apart.
        let frames = recorder.frames
        if let five = frames.first(where: { $0.sequenceNumber == 5 }) {
            let step = five.duration.seconds
            #expect(abs(skipped[0].presentationTimeStamp.seconds - (five.presentationTimeStamp.seconds - 2 * step)) < 1e-6)
            #expect(abs(skipped[1].presentationTimeStamp.seconds - (five.presentationTimeStamp.seconds - step)) < 1e-6)
        }
        #expect(frames.allSatisfy { $0.droppedFrameReason == nil })
    }

    // MARK: Photo delegate (row 15)

    final class ErrorTypedDelegate: CapturePhotoCaptureDelegate, @unchecked Sendable {
        // @unchecked: guarded by the Mutex.
        let errors = Mutex<[(any Error)?]>([])
        let done = DispatchSemaphore(value: 0)
        func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?) {
            errors.withLock { $0.append(error) }
        }
        func photoOutput(
            _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings, error: (any Error)?
        ) {
            done.signal()
        }
    }

    /// A photo delegate written with AVFoundation's `error: Error?` conforms and is called.
    @Test func aPhotoDelegateWithAVFoundationsErrorTypeIsCalled() throws {
        let output = CapturePhotoOutput()
        let session = CaptureSession()
        try session.addInput(CaptureDeviceInput(device: CaptureDevice(syntheticScene: movingScene(frames: nil))))
        try session.addOutput(output)
        let delegate = ErrorTypedDelegate()
        try session.startRunning()
        try output.capturePhoto(with: CapturePhotoSettings(), delegate: delegate)
        #expect(delegate.done.wait(timeout: .now() + 60) == .success)
        try session.stopRunning()
        let errors = delegate.errors.withLock { $0 }
        #expect(errors.count == 1)
        #expect(errors.allSatisfy { $0 == nil })
    }

    // MARK: Preview layer (row 1)

    @Test func anEmptyLayerHasNoGeometryUntilItHasASessionAndAFrame() throws {
        let layer = CaptureVideoPreviewLayer()
        #expect(layer.session == nil && layer.connection == nil && !layer.hasGeometry)
        #expect(layer.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 10, y: 10)).x.isNaN)
        #expect(layer.layerRectConverted(fromMetadataOutputRect: CGRect(x: 0, y: 0, width: 1, height: 1)).isNull)
        let face = MetadataFaceObject(
            bounds: CGRect(x: 0.4, y: 0.4, width: 0.2, height: 0.2), faceID: 1, confidence: 0.9, time: .zero,
            inputID: CaptureInput.ID(rawValue: 1))
        #expect(layer.transformedMetadataObject(for: face) == nil)

        let session = CaptureSession()
        layer.session = session
        layer.frame = CGRect(x: 20, y: 30, width: 390, height: 844)
        #expect(layer.bounds == CGRect(x: 0, y: 0, width: 390, height: 844), "a frame sets bounds at origin zero, as a CALayer")
        #expect(layer.frame == CGRect(x: 20, y: 30, width: 390, height: 844))
        #expect(!layer.hasGeometry, "a session without an input has no frame to show")
    }

    /// Following a session: the frame size is its input's, the rotation and mirroring its video
    /// data output's connection — read afresh as the session changes — and every conversion
    /// equals that of a fixed layer with the same values.
    @Test func aLayerFollowsItsSessionAsItChanges() throws {
        let scene = SyntheticScene(
            size: .init(width: 1280, height: 720), frameRate: 30, frameCount: 30, additionalSizes: [.init(width: 640, height: 480)])
        let session = CaptureSession()
        let layer = CaptureVideoPreviewLayer(session: session)
        #expect(layer.session === session)
        layer.videoGravity = .resizeAspectFill
        layer.frame = CGRect(x: 0, y: 0, width: 390, height: 844)
        let input = try CaptureDeviceInput(device: CaptureDevice(syntheticScene: scene))
        try session.addInput(input)
        let video = CaptureVideoDataOutput()
        try session.addOutput(video)

        func expectSame(as fixed: CaptureVideoPreviewLayer, sourceLocation: SourceLocation = #_sourceLocation) {
            for p in [CGPoint(x: 0, y: 0), CGPoint(x: 195, y: 422), CGPoint(x: 390, y: 844), CGPoint(x: 12.5, y: 700)] {
                let a = layer.captureDevicePointConverted(fromLayerPoint: p), b = fixed.captureDevicePointConverted(fromLayerPoint: p)
                #expect(abs(a.x - b.x) < 1e-9 && abs(a.y - b.y) < 1e-9, "\(p): \(a) vs \(b)", sourceLocation: sourceLocation)
            }
        }
        #expect(layer.hasGeometry && layer.inputID == input.id)
        #expect(layer.frameDimensions == .init(width: 1280, height: 720))
        expectSame(as: try CaptureVideoPreviewLayer(
            bounds: layer.bounds, videoGravity: .resizeAspectFill, frameDimensions: .init(width: 1280, height: 720)))

        // The app turns the picture through the layer's connection (the video data output's).
        let connection = try #require(layer.connection)
        #expect(connection === video.connection(with: .video))
        connection.videoRotationAngle = 90
        connection.isVideoMirrored = true
        #expect(layer.videoRotationAngle == 90 && layer.isVideoMirrored)
        expectSame(as: try CaptureVideoPreviewLayer(
            bounds: layer.bounds, videoGravity: .resizeAspectFill, videoRotationAngle: 90, isVideoMirrored: true,
            frameDimensions: .init(width: 1280, height: 720)))

        // A new preset changes the frame the layer maps.
        session.sessionPreset = .vga640x480
        #expect(layer.frameDimensions == .init(width: 640, height: 480))
        expectSame(as: try CaptureVideoPreviewLayer(
            bounds: layer.bounds, videoGravity: .resizeAspectFill, videoRotationAngle: 90, isVideoMirrored: true,
            frameDimensions: .init(width: 640, height: 480)))

        // Without its input the session has nothing to show.
        try session.removeInput(input)
        #expect(!layer.hasGeometry && layer.inputID == nil)
        layer.session = nil
        #expect(layer.session == nil)
    }
}
