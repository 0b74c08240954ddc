import CaptureKit
import CaptureKitTesting
import Dispatch
import Foundation
import Testing

/// `SampleBuffer.jpegData` through a session and a video data output: a source's own JPEG stays
/// on the frames only while the pixels are still its decode, untransformed.
@Suite(.serialized) struct VideoDataJPEGTests {
    static let jpegPath = Fixtures.faceImage("grace_hopper.jpg")

    /// Runs a JPEG camera through a video data output with the given connection settings and
    /// returns the first frames delivered, with the source.
    static func frames(
        rotation: Double = 0, mirrored: Bool = false, pixelFormat: PixelFormat? = .bgr, count: Int = 3
    ) throws -> ([SampleBuffer], JPEGCameraSource) {
        let source = try JPEGCameraSource(jpegAt: jpegPath, interval: 0.01)
        let device = try CaptureDevice(uniqueID: "jpeg", localizedName: "JPEG camera", deviceType: .external, source: source)
        let session = CaptureSession()
        try session.addInput(try CaptureDeviceInput(device: device))
        let output = CaptureVideoDataOutput()
        output.videoPixelFormat = pixelFormat
        output.alwaysDiscardsLateVideoFrames = false
        let recorder = FrameRecorder()
        output.setSampleBufferDelegate(recorder, queue: DispatchQueue(label: "jpeg.test"))
        try session.addOutput(output)
        let connection = try #require(output.connection(with: .video))
        connection.videoRotationAngle = rotation
        connection.isVideoMirrored = mirrored
        try session.startRunning()
        let frames = recorder.wait(for: count)
        try session.stopRunning()
        try #require(frames.count >= count, "got \(frames.count) frames of \(count)")
        return (Array(frames.prefix(count)), source)
    }

    @Test func theSourcesJPEGStaysOnUntransformedFrames() throws {
        let (frames, source) = try Self.frames()
        #expect(source.jpegData.count > 1000)
        for frame in frames {
            #expect(frame.jpegData == source.jpegData)
            #expect(frame.width == source.pixelBuffer.width && frame.height == source.pixelBuffer.height)
            #expect(frame.pixelBuffer.packedBytes() == source.pixelBuffer.packedBytes())
        }
    }

    @Test(arguments: [(90.0, false), (180.0, false), (270.0, false), (0.0, true), (90.0, true)])
    func rotationOrMirroringDropsTheJPEG(rotation: Double, mirrored: Bool) throws {
        let (frames, source) = try Self.frames(rotation: rotation, mirrored: mirrored)
        for frame in frames {
            #expect(frame.jpegData == nil, "rotation \(rotation), mirrored \(mirrored)")
            if rotation == 90 || rotation == 270 {
                #expect(frame.width == source.pixelBuffer.height && frame.height == source.pixelBuffer.width)
            }
        }
    }

    /// A pixel-format conversion shows the same picture, so the JPEG still describes it.
    @Test func aPixelFormatConversionKeepsTheJPEG() throws {
        let (frames, source) = try Self.frames(pixelFormat: .gray)
        for frame in frames {
            #expect(frame.pixelFormat == .gray)
            #expect(frame.jpegData == source.jpegData)
        }
        // Rotated as well: dropped, whatever the format.
        let (rotated, _) = try Self.frames(rotation: 90, pixelFormat: .gray)
        #expect(rotated.allSatisfy { $0.jpegData == nil })
    }

    @Test func aSyntheticCameraCarriesNoJPEG() throws {
        let device = try CaptureDevice(syntheticScene: SyntheticScene(size: .init(width: 64, height: 48)))
        let session = CaptureSession()
        try session.addInput(try CaptureDeviceInput(device: device))
        let output = CaptureVideoDataOutput()
        let recorder = FrameRecorder()
        output.setSampleBufferDelegate(recorder, queue: DispatchQueue(label: "synthetic.test"))
        try session.addOutput(output)
        try session.startRunning()
        let frames = recorder.wait(for: 2)
        try session.stopRunning()
        #expect(frames.count >= 2)
        #expect(frames.allSatisfy { $0.jpegData == nil })
    }

    @Test func aFileThatIsNotAJPEGIsRefusedWithItsPath() throws {
        let png = Fixtures.faceImage("astronaut.png")
        do {
            _ = try JPEGCameraSource(jpegAt: png)
            Issue.record("a PNG was accepted as a JPEG camera")
        } catch {
            #expect(error.code == .unreadableImage)
            #expect(error.message.contains("astronaut.png"))
        }
    }
}
