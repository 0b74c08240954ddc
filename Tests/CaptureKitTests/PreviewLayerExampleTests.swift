import CaptureKit
import Foundation
import Testing

@Suite("PreviewLayer examples and parsing")
struct PreviewLayerExampleTests {
    /// The worked example in `CaptureVideoPreviewLayer`'s doc comment, number for number.
    @Test func docCommentWorkedExample() throws {
        let layer = try CaptureVideoPreviewLayer(
            bounds: CGRect(x: 0, y: 0, width: 600, height: 1200), videoGravity: .resizeAspectFill,
            videoRotationAngle: 90, isVideoMirrored: true, frameDimensions: .init(width: 640, height: 480))
        let p = layer.layerPointConverted(fromCaptureDevicePoint: CGPoint(x: 0.5, y: 0.25))
        #expect(previewLayerClose(p, CGPoint(x: 75, y: 600)), "got \(p)")
        let back = layer.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 75, y: 600))
        #expect(previewLayerClose(back, CGPoint(x: 0.5, y: 0.25)), "got \(back)")
        let cropped = layer.layerPointConverted(fromCaptureDevicePoint: CGPoint(x: 0.25, y: 0.125))
        #expect(previewLayerClose(cropped, CGPoint(x: -37.5, y: 300)), "got \(cropped)")
        #expect(!layer.bounds.contains(cropped))
        #expect(layer.description == "CaptureVideoPreviewLayer(bounds 0,0 600x1200, resizeAspectFill, 90°, mirrored, frame 640x480)")
    }

    /// One example per gravity (frame 400×300, view 1200×600, 0°, not mirrored), as quoted
    /// when the issue was closed.
    @Test func oneExamplePerGravity() throws {
        func layer(_ g: CaptureVideoPreviewLayer.VideoGravity) throws -> CaptureVideoPreviewLayer {
            try CaptureVideoPreviewLayer(
                bounds: CGRect(x: 0, y: 0, width: 1200, height: 600), videoGravity: g,
                frameDimensions: .init(width: 400, height: 300))
        }
        let device = CGPoint(x: 0.25, y: 0.125)
        let rect = CGRect(x: 0.125, y: 0.25, width: 0.375, height: 0.125)

        // Stretch: x·1200, y·600.
        let stretch = try layer(.resize)
        #expect(previewLayerClose(stretch.layerPointConverted(fromCaptureDevicePoint: device), CGPoint(x: 300, y: 75)))
        #expect(previewLayerClose(stretch.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 600, y: 300)), CGPoint(x: 0.5, y: 0.5)))
        #expect(previewLayerClose(stretch.layerRectConverted(fromMetadataOutputRect: rect), CGRect(x: 150, y: 150, width: 450, height: 75)))

        // Fit: 800×600 at x = 200, a 200-point bar each side.
        let fit = try layer(.resizeAspect)
        #expect(previewLayerClose(fit.layerPointConverted(fromCaptureDevicePoint: device), CGPoint(x: 400, y: 75)))
        // A tap in the left bar: (100 − 200)/800 = −0.125, outside 0…1.
        #expect(previewLayerClose(fit.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 100, y: 300)), CGPoint(x: -0.125, y: 0.5)))
        #expect(previewLayerClose(fit.layerRectConverted(fromMetadataOutputRect: rect), CGRect(x: 300, y: 150, width: 300, height: 75)))
        // The whole view covers device x −0.25…1.25.
        #expect(previewLayerClose(
            fit.metadataOutputRectConverted(fromLayerRect: fit.bounds), CGRect(x: -0.25, y: 0, width: 1.5, height: 1)))

        // Fill: 1200×900 at y = −150, 150 points cropped above and below.
        let fill = try layer(.resizeAspectFill)
        #expect(previewLayerClose(fill.layerPointConverted(fromCaptureDevicePoint: device), CGPoint(x: 300, y: -37.5)))
        #expect(previewLayerClose(fill.captureDevicePointConverted(fromLayerPoint: .zero), CGPoint(x: 0, y: 1.0 / 6)))
        #expect(previewLayerClose(fill.layerRectConverted(fromMetadataOutputRect: rect), CGRect(x: 150, y: 75, width: 450, height: 112.5)))
        // The visible part of the frame, e.g. for a rectOfInterest: y 1/6…5/6.
        #expect(previewLayerClose(
            fill.metadataOutputRectConverted(fromLayerRect: fill.bounds), CGRect(x: 0, y: 1.0 / 6, width: 1, height: 2.0 / 3)))
    }

    /// Bounds with an origin: the preview is a region of a bigger screen.
    @Test func boundsOriginOffsetsLayerSpace() throws {
        let layer = try CaptureVideoPreviewLayer(
            bounds: CGRect(x: 100, y: 50, width: 1200, height: 600), videoGravity: .resizeAspect,
            frameDimensions: .init(width: 400, height: 300))
        // Fit puts the frame at (200, 0) inside the view, so at (300, 50) on the screen.
        let p = layer.layerPointConverted(fromCaptureDevicePoint: CGPoint(x: 0.25, y: 0.125))
        #expect(previewLayerClose(p, CGPoint(x: 500, y: 125)), "got \(p)")
        #expect(previewLayerClose(layer.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 300, y: 50)), .zero))
    }

    @Test func nullRectStaysNull() throws {
        let layer = try CaptureVideoPreviewLayer(
            bounds: CGRect(x: 0, y: 0, width: 640, height: 480), frameDimensions: .init(width: 640, height: 480))
        #expect(layer.layerRectConverted(fromMetadataOutputRect: .null).isNull)
        #expect(layer.metadataOutputRectConverted(fromLayerRect: .null).isNull)
    }

    @Test func defaultsMatchAVFoundation() throws {
        let layer = try CaptureVideoPreviewLayer(
            bounds: CGRect(x: 0, y: 0, width: 640, height: 480), frameDimensions: .init(width: 640, height: 480))
        #expect(layer.videoGravity == .resizeAspect)
        #expect(layer.videoRotationAngle == 0)
        #expect(layer.isVideoMirrored == false)
        #expect(layer.inputID == nil)
        #expect(layer.connection == nil)
    }

    @Test func invalidGeometryIsRejected() {
        let frame = CaptureDevice.Dimensions(width: 640, height: 480)
        let view = CGRect(x: 0, y: 0, width: 640, height: 480)
        #expect(throws: CaptureError.self) {
            try CaptureVideoPreviewLayer(bounds: view, videoRotationAngle: 45, frameDimensions: frame)
        }
        #expect(throws: CaptureError.self) {
            try CaptureVideoPreviewLayer(bounds: view, videoRotationAngle: -90, frameDimensions: frame)
        }
        #expect(throws: CaptureError.self) {
            try CaptureVideoPreviewLayer(bounds: view, frameDimensions: .init(width: 0, height: 480))
        }
        #expect(throws: CaptureError.self) {
            try CaptureVideoPreviewLayer(bounds: CGRect(x: 0, y: 0, width: 0, height: 480), frameDimensions: frame)
        }
        #expect(throws: CaptureError.self) {
            try CaptureVideoPreviewLayer(bounds: CGRect(x: Double.nan, y: 0, width: 640, height: 480), frameDimensions: frame)
        }
        #expect(throws: CaptureError.self) {
            try CaptureVideoPreviewLayer(bounds: CGRect(x: 0, y: 0, width: 640, height: Double.infinity), frameDimensions: frame)
        }
        do {
            _ = try CaptureVideoPreviewLayer(bounds: view, videoRotationAngle: 45, frameDimensions: frame)
        } catch {
            #expect(error.code == .invalidPreviewGeometry)
            #expect(error.message.contains("0, 90, 180, 270"))
        }
    }
}
