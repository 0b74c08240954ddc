import CaptureKit
import Testing
@testable import CapturePreview

/// A preview camera over a session that is never started, with `device` as its input, video and
/// metadata outputs: tests feed its observer and set its connection by hand.
struct UnstartedPreviewCamera {
    /// Kept so the outputs stay connected for as long as the fixture lives.
    let session = CaptureSession()
    let camera: PreviewCamera
    let input: CaptureDeviceInput
    let metadata: CaptureMetadataOutput
    let connection: CaptureConnection

    init(device: CaptureDevice) throws {
        input = try CaptureDeviceInput(device: device)
        try session.addInput(input)
        let video = CaptureVideoDataOutput()
        metadata = CaptureMetadataOutput()
        try session.addOutput(video)
        try session.addOutput(metadata)
        camera = PreviewCamera(
            name: "test", input: input, video: video, metadata: metadata, photos: nil,
            streamSettings: .init(maximumSize: nil, quality: 70, framesPerSecond: 10))
        connection = try #require(video.connection(with: .video))
    }
}
