import CaptureKit
import Foundation
import Testing

// Hand-worked conversions: every gravity × rotation × mirroring on a landscape and a portrait
// view (48 cases), with literal expected numbers.
//
// Frame 400×300 (4:3). Landscape view 1200×600, portrait view 600×1200. Device point
// (0.25, 0.125) and device rect x 0.125…0.5, y 0.25…0.375 (all exact in binary, so the four
// values 0.25/0.75/0.125/0.875 stay distinguishable after every rotation and mirror).
//
// Step 1+2, the displayed point (u, v) of device (0.25, 0.125):
//   0°: (0.25, 0.125)   mirrored (0.75, 0.125)
//  90°: (1 − y, x) = (0.875, 0.25)   mirrored (0.125, 0.25)
// 180°: (0.75, 0.875)  mirrored (0.25, 0.875)
// 270°: (y, 1 − x) = (0.125, 0.75)   mirrored (0.875, 0.75)
// Step 3, where the rotated frame lands (layer = origin + (u·width, v·height)):
//   resize: the view itself.
//   fit  0/180 (400×300):  landscape scale min(3, 2) = 2   → (200, 0, 800, 600);
//                          portrait  scale min(1.5, 4) = 1.5 → (0, 375, 600, 450).
//   fit  90/270 (300×400): landscape min(4, 1.5) = 1.5 → (375, 0, 450, 600);
//                          portrait  min(2, 3) = 2     → (0, 200, 600, 800).
//   fill 0/180:  landscape max = 3 → (0, −150, 1200, 900); portrait max = 4 → (−500, 0, 1600, 1200).
//   fill 90/270: landscape max = 4 → (0, −500, 1200, 1600); portrait max = 3 → (−150, 0, 900, 1200).
// E.g. fit, landscape, 90°, not mirrored: (375 + 0.875·450, 0.25·600) = (768.75, 150).
// The rect column is the same arithmetic on the rect's corners (displayed u/v ranges:
// 0° u .125….5 v .25….375; 90° u .625….75 v .125….5; 180° u .5….875 v .625….75;
// 270° u .25….375 v .5….875; mirroring maps u to 1 − u). Both columns were cross-checked
// with a separate script that works in the rotated frame's pixels rather than this type's
// normalised video rect.

/// One hand-worked case.
struct PreviewLayerCase: Sendable, CustomTestStringConvertible {
    static let frame = CaptureDevice.Dimensions(width: 400, height: 300)
    static let devicePoint = CGPoint(x: 0.25, y: 0.125)
    static let deviceRect = CGRect(x: 0.125, y: 0.25, width: 0.375, height: 0.125)

    let gravity: CaptureVideoPreviewLayer.VideoGravity
    let view: CGSize
    let rotation: Double
    let mirrored: Bool
    let point: CGPoint
    let rect: CGRect

    init(
        _ gravity: CaptureVideoPreviewLayer.VideoGravity, _ view: CGSize, _ rotation: Double, _ mirrored: Bool,
        point: (Double, Double), rect: (Double, Double, Double, Double)
    ) {
        self.gravity = gravity
        self.view = view
        self.rotation = rotation
        self.mirrored = mirrored
        self.point = CGPoint(x: point.0, y: point.1)
        self.rect = CGRect(x: rect.0, y: rect.1, width: rect.2, height: rect.3)
    }

    var testDescription: String {
        "\(gravity) \(Int(view.width))x\(Int(view.height)) \(Int(rotation))°\(mirrored ? " mirrored" : "")"
    }

    func layer() throws -> CaptureVideoPreviewLayer {
        try CaptureVideoPreviewLayer(
            bounds: CGRect(origin: .zero, size: view), videoGravity: gravity, videoRotationAngle: rotation,
            isVideoMirrored: mirrored, frameDimensions: Self.frame)
    }
}

private let landscape = CGSize(width: 1200, height: 600)
private let portrait = CGSize(width: 600, height: 1200)

let previewLayerHandWorkedCases: [PreviewLayerCase] = [
    PreviewLayerCase(.resize, landscape, 0, false, point: (300, 75), rect: (150, 150, 450, 75)),
    PreviewLayerCase(.resize, landscape, 0, true, point: (900, 75), rect: (600, 150, 450, 75)),
    PreviewLayerCase(.resize, landscape, 90, false, point: (1050, 150), rect: (750, 75, 150, 225)),
    PreviewLayerCase(.resize, landscape, 90, true, point: (150, 150), rect: (300, 75, 150, 225)),
    PreviewLayerCase(.resize, landscape, 180, false, point: (900, 525), rect: (600, 375, 450, 75)),
    PreviewLayerCase(.resize, landscape, 180, true, point: (300, 525), rect: (150, 375, 450, 75)),
    PreviewLayerCase(.resize, landscape, 270, false, point: (150, 450), rect: (300, 300, 150, 225)),
    PreviewLayerCase(.resize, landscape, 270, true, point: (1050, 450), rect: (750, 300, 150, 225)),
    PreviewLayerCase(.resize, portrait, 0, false, point: (150, 150), rect: (75, 300, 225, 150)),
    PreviewLayerCase(.resize, portrait, 0, true, point: (450, 150), rect: (300, 300, 225, 150)),
    PreviewLayerCase(.resize, portrait, 90, false, point: (525, 300), rect: (375, 150, 75, 450)),
    PreviewLayerCase(.resize, portrait, 90, true, point: (75, 300), rect: (150, 150, 75, 450)),
    PreviewLayerCase(.resize, portrait, 180, false, point: (450, 1050), rect: (300, 750, 225, 150)),
    PreviewLayerCase(.resize, portrait, 180, true, point: (150, 1050), rect: (75, 750, 225, 150)),
    PreviewLayerCase(.resize, portrait, 270, false, point: (75, 900), rect: (150, 600, 75, 450)),
    PreviewLayerCase(.resize, portrait, 270, true, point: (525, 900), rect: (375, 600, 75, 450)),
    PreviewLayerCase(.resizeAspect, landscape, 0, false, point: (400, 75), rect: (300, 150, 300, 75)),
    PreviewLayerCase(.resizeAspect, landscape, 0, true, point: (800, 75), rect: (600, 150, 300, 75)),
    PreviewLayerCase(.resizeAspect, landscape, 90, false, point: (768.75, 150), rect: (656.25, 75, 56.25, 225)),
    PreviewLayerCase(.resizeAspect, landscape, 90, true, point: (431.25, 150), rect: (487.5, 75, 56.25, 225)),
    PreviewLayerCase(.resizeAspect, landscape, 180, false, point: (800, 525), rect: (600, 375, 300, 75)),
    PreviewLayerCase(.resizeAspect, landscape, 180, true, point: (400, 525), rect: (300, 375, 300, 75)),
    PreviewLayerCase(.resizeAspect, landscape, 270, false, point: (431.25, 450), rect: (487.5, 300, 56.25, 225)),
    PreviewLayerCase(.resizeAspect, landscape, 270, true, point: (768.75, 450), rect: (656.25, 300, 56.25, 225)),
    PreviewLayerCase(.resizeAspect, portrait, 0, false, point: (150, 431.25), rect: (75, 487.5, 225, 56.25)),
    PreviewLayerCase(.resizeAspect, portrait, 0, true, point: (450, 431.25), rect: (300, 487.5, 225, 56.25)),
    PreviewLayerCase(.resizeAspect, portrait, 90, false, point: (525, 400), rect: (375, 300, 75, 300)),
    PreviewLayerCase(.resizeAspect, portrait, 90, true, point: (75, 400), rect: (150, 300, 75, 300)),
    PreviewLayerCase(.resizeAspect, portrait, 180, false, point: (450, 768.75), rect: (300, 656.25, 225, 56.25)),
    PreviewLayerCase(.resizeAspect, portrait, 180, true, point: (150, 768.75), rect: (75, 656.25, 225, 56.25)),
    PreviewLayerCase(.resizeAspect, portrait, 270, false, point: (75, 800), rect: (150, 600, 75, 300)),
    PreviewLayerCase(.resizeAspect, portrait, 270, true, point: (525, 800), rect: (375, 600, 75, 300)),
    PreviewLayerCase(.resizeAspectFill, landscape, 0, false, point: (300, -37.5), rect: (150, 75, 450, 112.5)),
    PreviewLayerCase(.resizeAspectFill, landscape, 0, true, point: (900, -37.5), rect: (600, 75, 450, 112.5)),
    PreviewLayerCase(.resizeAspectFill, landscape, 90, false, point: (1050, -100), rect: (750, -300, 150, 600)),
    PreviewLayerCase(.resizeAspectFill, landscape, 90, true, point: (150, -100), rect: (300, -300, 150, 600)),
    PreviewLayerCase(.resizeAspectFill, landscape, 180, false, point: (900, 637.5), rect: (600, 412.5, 450, 112.5)),
    PreviewLayerCase(.resizeAspectFill, landscape, 180, true, point: (300, 637.5), rect: (150, 412.5, 450, 112.5)),
    PreviewLayerCase(.resizeAspectFill, landscape, 270, false, point: (150, 700), rect: (300, 300, 150, 600)),
    PreviewLayerCase(.resizeAspectFill, landscape, 270, true, point: (1050, 700), rect: (750, 300, 150, 600)),
    PreviewLayerCase(.resizeAspectFill, portrait, 0, false, point: (-100, 150), rect: (-300, 300, 600, 150)),
    PreviewLayerCase(.resizeAspectFill, portrait, 0, true, point: (700, 150), rect: (300, 300, 600, 150)),
    PreviewLayerCase(.resizeAspectFill, portrait, 90, false, point: (637.5, 300), rect: (412.5, 150, 112.5, 450)),
    PreviewLayerCase(.resizeAspectFill, portrait, 90, true, point: (-37.5, 300), rect: (75, 150, 112.5, 450)),
    PreviewLayerCase(.resizeAspectFill, portrait, 180, false, point: (700, 1050), rect: (300, 750, 600, 150)),
    PreviewLayerCase(.resizeAspectFill, portrait, 180, true, point: (-100, 1050), rect: (-300, 750, 600, 150)),
    PreviewLayerCase(.resizeAspectFill, portrait, 270, false, point: (-37.5, 900), rect: (75, 600, 112.5, 450)),
    PreviewLayerCase(.resizeAspectFill, portrait, 270, true, point: (637.5, 900), rect: (412.5, 600, 112.5, 450)),
]

/// Whether two numbers agree to within `tolerance`.
func previewLayerClose(_ a: Double, _ b: Double, _ tolerance: Double = 1e-9) -> Bool {
    abs(a - b) <= tolerance
}

/// Whether two points agree to within `tolerance` on both axes.
func previewLayerClose(_ a: CGPoint, _ b: CGPoint, _ tolerance: Double = 1e-9) -> Bool {
    previewLayerClose(a.x, b.x, tolerance) && previewLayerClose(a.y, b.y, tolerance)
}

/// Whether two rects agree to within `tolerance` on origin and size.
func previewLayerClose(_ a: CGRect, _ b: CGRect, _ tolerance: Double = 1e-9) -> Bool {
    previewLayerClose(a.origin, b.origin, tolerance) && previewLayerClose(a.width, b.width, tolerance)
        && previewLayerClose(a.height, b.height, tolerance)
}

@Suite("PreviewLayer hand-worked conversions")
struct PreviewLayerHandWorkedTests {
    @Test func everyCombinationIsCovered() {
        let keys = Set(previewLayerHandWorkedCases.map { "\($0.gravity) \($0.view) \($0.rotation) \($0.mirrored)" })
        #expect(keys.count == 3 * 2 * 4 * 2)
    }

    @Test(arguments: previewLayerHandWorkedCases)
    func devicePointToLayerAndBack(_ c: PreviewLayerCase) throws {
        let layer = try c.layer()
        let got = layer.layerPointConverted(fromCaptureDevicePoint: PreviewLayerCase.devicePoint)
        #expect(previewLayerClose(got, c.point), "got \(got), worked by hand \(c.point)")
        let back = layer.captureDevicePointConverted(fromLayerPoint: c.point)
        #expect(previewLayerClose(back, PreviewLayerCase.devicePoint), "got \(back)")
    }

    @Test(arguments: previewLayerHandWorkedCases)
    func deviceRectToLayerAndBack(_ c: PreviewLayerCase) throws {
        let layer = try c.layer()
        let got = layer.layerRectConverted(fromMetadataOutputRect: PreviewLayerCase.deviceRect)
        #expect(previewLayerClose(got, c.rect), "got \(got), worked by hand \(c.rect)")
        let back = layer.metadataOutputRectConverted(fromLayerRect: c.rect)
        #expect(previewLayerClose(back, PreviewLayerCase.deviceRect), "got \(back)")
    }
}
