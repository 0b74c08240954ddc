import CaptureKit
import Foundation

/// `--view WxH --gravity … --rotate … --mirror`: maps device-space boxes to the coordinates of
/// the screen a kiosk shows, through `CaptureVideoPreviewLayer`.
package struct PreviewMapping: Sendable {
    package let layer: CaptureVideoPreviewLayer

    package init?(options: InputOptions, frame: CaptureDevice.Dimensions) throws {
        guard let view = options.view else { return nil }
        layer = try CaptureVideoPreviewLayer(
            bounds: view.bounds, videoGravity: options.gravity.videoGravity,
            videoRotationAngle: Double(options.rotate.degrees), isVideoMirrored: options.mirror, frameDimensions: frame)
    }

    package func layerRect(fromDeviceRect rect: CGRect) -> CGRect {
        layer.layerRectConverted(fromMetadataOutputRect: rect)
    }
}
