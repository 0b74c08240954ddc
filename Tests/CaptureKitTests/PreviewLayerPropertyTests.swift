@testable import CaptureKit
@testable import CaptureVision
import CaptureKitTesting
import Foundation
import Testing

/// A random geometry and the values it was built from (the test oracle reads these, not the
/// layer's conversions).
struct PreviewLayerRandomGeometry {
    let layer: CaptureVideoPreviewLayer
    let bounds: CGRect
    let gravity: CaptureVideoPreviewLayer.VideoGravity
    let rotation: Double
    let mirrored: Bool
    let frame: CaptureDevice.Dimensions

    init(using rng: inout SplitMix64) throws {
        gravity = CaptureVideoPreviewLayer.VideoGravity.allCases.randomElement(using: &rng)!
        rotation = CaptureVideoPreviewLayer.supportedVideoRotationAngles.randomElement(using: &rng)!
        mirrored = Bool.random(using: &rng)
        frame = .init(width: Int.random(in: 16...4096, using: &rng), height: Int.random(in: 16...4096, using: &rng))
        bounds = CGRect(
            x: Double.random(in: -1000...1000, using: &rng), y: Double.random(in: -1000...1000, using: &rng),
            width: Double.random(in: 16...4096, using: &rng), height: Double.random(in: 16...4096, using: &rng))
        layer = try CaptureVideoPreviewLayer(
            bounds: bounds, videoGravity: gravity, videoRotationAngle: rotation, isVideoMirrored: mirrored,
            frameDimensions: frame)
    }

    /// Device point shown at a displayed point (normalised in the rotated, mirrored frame),
    /// from the table in the doc comment: undo the mirror, then the rotation.
    func deviceFromDisplayed(_ p: CGPoint) -> CGPoint {
        let u = mirrored ? 1 - p.x : p.x, v = p.y
        switch rotation {
        case 90: return CGPoint(x: v, y: 1 - u)
        case 180: return CGPoint(x: 1 - u, y: 1 - v)
        case 270: return CGPoint(x: 1 - v, y: u)
        default: return CGPoint(x: u, y: v)
        }
    }

    /// The view's top-left corner in displayed coordinates, from the aspect ratios as the
    /// doc comment states it.
    var displayedTopLeft: CGPoint {
        let a = Double(bounds.width / bounds.height)
        let f = rotation == 90 || rotation == 270
            ? Double(frame.height) / Double(frame.width) : Double(frame.width) / Double(frame.height)
        switch gravity {
        case .resize: return .zero
        case .resizeAspect: return a > f ? CGPoint(x: -(a / f - 1) / 2, y: 0) : CGPoint(x: 0, y: -(f / a - 1) / 2)
        case .resizeAspectFill: return a > f ? CGPoint(x: 0, y: (1 - f / a) / 2) : CGPoint(x: (1 - a / f) / 2, y: 0)
        }
    }

    func randomDevicePoint(using rng: inout SplitMix64) -> CGPoint {
        CGPoint(x: Double.random(in: -0.5...1.5, using: &rng), y: Double.random(in: -0.5...1.5, using: &rng))
    }

    func randomLayerPoint(using rng: inout SplitMix64) -> CGPoint {
        CGPoint(
            x: Double.random(in: bounds.minX - bounds.width / 2...bounds.maxX + bounds.width / 2, using: &rng),
            y: Double.random(in: bounds.minY - bounds.height / 2...bounds.maxY + bounds.height / 2, using: &rng))
    }
}

private func previewLayerBoundingBox(_ points: [CGPoint]) -> CGRect {
    let xs = points.map(\.x), ys = points.map(\.y)
    return CGRect(x: xs.min()!, y: ys.min()!, width: xs.max()! - xs.min()!, height: ys.max()! - ys.min()!)
}

private func previewLayerCorners(_ r: CGRect) -> [CGPoint] {
    [CGPoint(x: r.minX, y: r.minY), CGPoint(x: r.maxX, y: r.minY), CGPoint(x: r.maxX, y: r.maxY), CGPoint(x: r.minX, y: r.maxY)]
}

/// Twice the signed area of a polygon; positive when it runs clockwise on screen (y down).
func previewLayerSignedArea(_ p: [CGPoint]) -> Double {
    zip(p, p.dropFirst() + [p[0]]).reduce(0) { $0 + Double($1.0.x * $1.1.y - $1.1.x * $1.0.y) }
}

@Suite("PreviewLayer properties over random geometries")
struct PreviewLayerPropertyTests {
    static let geometries = 2000
    static let samples = 20

    @Test func pointRoundTripsAreExact() throws {
        var rng = SplitMix64(seed: 0x5EED_0001)
        for _ in 0..<Self.geometries {
            let g = try PreviewLayerRandomGeometry(using: &rng)
            for _ in 0..<Self.samples {
                let d = g.randomDevicePoint(using: &rng)
                let back = g.layer.captureDevicePointConverted(fromLayerPoint: g.layer.layerPointConverted(fromCaptureDevicePoint: d))
                #expect(previewLayerClose(back, d), "device \(d) → \(back) in \(g.layer)")
                let l = g.randomLayerPoint(using: &rng)
                let lBack = g.layer.layerPointConverted(fromCaptureDevicePoint: g.layer.captureDevicePointConverted(fromLayerPoint: l))
                #expect(previewLayerClose(lBack, l), "layer \(l) → \(lBack) in \(g.layer)")
            }
        }
    }

    @Test func rectRoundTripsAreExact() throws {
        var rng = SplitMix64(seed: 0x5EED_0002)
        for _ in 0..<Self.geometries {
            let g = try PreviewLayerRandomGeometry(using: &rng)
            for _ in 0..<Self.samples {
                let o = g.randomDevicePoint(using: &rng)
                let d = CGRect(x: o.x, y: o.y, width: Double.random(in: 0...1, using: &rng), height: Double.random(in: 0...1, using: &rng))
                let back = g.layer.metadataOutputRectConverted(fromLayerRect: g.layer.layerRectConverted(fromMetadataOutputRect: d))
                #expect(previewLayerClose(back, d), "device rect \(d) → \(back)")
                let lo = g.randomLayerPoint(using: &rng)
                let l = CGRect(
                    x: lo.x, y: lo.y, width: Double.random(in: 0...g.bounds.width, using: &rng),
                    height: Double.random(in: 0...g.bounds.height, using: &rng))
                let lBack = g.layer.layerRectConverted(fromMetadataOutputRect: g.layer.metadataOutputRectConverted(fromLayerRect: l))
                #expect(previewLayerClose(lBack, l), "layer rect \(l) → \(lBack)")
            }
        }
    }

    @Test func rectConversionIsBoundingBoxOfConvertedCorners() throws {
        var rng = SplitMix64(seed: 0x5EED_0003)
        for _ in 0..<Self.geometries {
            let g = try PreviewLayerRandomGeometry(using: &rng)
            for _ in 0..<Self.samples {
                let o = g.randomDevicePoint(using: &rng)
                let d = CGRect(x: o.x, y: o.y, width: Double.random(in: 0...1, using: &rng), height: Double.random(in: 0...1, using: &rng))
                let expected = previewLayerBoundingBox(previewLayerCorners(d).map(g.layer.layerPointConverted(fromCaptureDevicePoint:)))
                #expect(previewLayerClose(g.layer.layerRectConverted(fromMetadataOutputRect: d), expected))
                let lo = g.randomLayerPoint(using: &rng)
                let l = CGRect(x: lo.x, y: lo.y, width: Double.random(in: 0...500, using: &rng), height: Double.random(in: 0...500, using: &rng))
                let lExpected = previewLayerBoundingBox(previewLayerCorners(l).map(g.layer.captureDevicePointConverted(fromLayerPoint:)))
                #expect(previewLayerClose(g.layer.metadataOutputRectConverted(fromLayerRect: l), lExpected))
            }
        }
    }

    /// The view's four corners land on the device points the doc comment gives.
    @Test func viewCornersMapToDocumentedDevicePoints() throws {
        var rng = SplitMix64(seed: 0x5EED_0004)
        for _ in 0..<Self.geometries {
            let g = try PreviewLayerRandomGeometry(using: &rng)
            let tl = g.displayedTopLeft
            let displayed = [tl, CGPoint(x: 1 - tl.x, y: tl.y), CGPoint(x: 1 - tl.x, y: 1 - tl.y), CGPoint(x: tl.x, y: 1 - tl.y)]
            for (corner, shown) in zip(previewLayerCorners(g.bounds), displayed) {
                let got = g.layer.captureDevicePointConverted(fromLayerPoint: corner)
                let expected = g.deviceFromDisplayed(shown)
                #expect(previewLayerClose(got, expected), "\(g.gravity) \(g.rotation)° \(g.mirrored): corner \(corner) → \(got), documented \(expected)")
            }
        }
    }

    /// The literal table in the doc comment: with `.resize`, the view's top-left shows these
    /// device points.
    @Test func viewTopLeftTable() throws {
        let table: [(Double, Bool, CGPoint)] = [
            (0, false, CGPoint(x: 0, y: 0)), (90, false, CGPoint(x: 0, y: 1)),
            (180, false, CGPoint(x: 1, y: 1)), (270, false, CGPoint(x: 1, y: 0)),
            (0, true, CGPoint(x: 1, y: 0)), (90, true, CGPoint(x: 0, y: 0)),
            (180, true, CGPoint(x: 0, y: 1)), (270, true, CGPoint(x: 1, y: 1)),
        ]
        for (rotation, mirrored, expected) in table {
            let layer = try CaptureVideoPreviewLayer(
                bounds: CGRect(x: 10, y: 20, width: 300, height: 700), videoGravity: .resize, videoRotationAngle: rotation,
                isVideoMirrored: mirrored, frameDimensions: .init(width: 1920, height: 1080))
            let got = layer.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 10, y: 20))
            #expect(previewLayerClose(got, expected), "\(rotation)° mirrored \(mirrored): \(got)")
        }
    }

    /// Fit shows the whole frame inside the view with the frame's aspect; fill covers the view
    /// with it and shows only device points inside 0…1.
    @Test func fitContainsAndFillCovers() throws {
        var rng = SplitMix64(seed: 0x5EED_0005)
        for _ in 0..<Self.geometries {
            let g = try PreviewLayerRandomGeometry(using: &rng)
            let whole = g.layer.layerRectConverted(fromMetadataOutputRect: CGRect(x: 0, y: 0, width: 1, height: 1))
            let turned = g.rotation == 90 || g.rotation == 270
            let f = Double(turned ? g.frame.height : g.frame.width) / Double(turned ? g.frame.width : g.frame.height)
            switch g.gravity {
            case .resize:
                #expect(previewLayerClose(whole, g.bounds))
            case .resizeAspect:
                #expect(previewLayerClose(whole.union(g.bounds), g.bounds, 1e-9))
                #expect(abs(Double(whole.width / whole.height) / f - 1) < 1e-12)
                #expect(previewLayerClose(whole.midX, g.bounds.midX) && previewLayerClose(whole.midY, g.bounds.midY))
            case .resizeAspectFill:
                #expect(previewLayerClose(whole.intersection(g.bounds), g.bounds, 1e-9))
                #expect(abs(Double(whole.width / whole.height) / f - 1) < 1e-12)
                #expect(previewLayerClose(whole.midX, g.bounds.midX) && previewLayerClose(whole.midY, g.bounds.midY))
                for _ in 0..<Self.samples {
                    let l = CGPoint(
                        x: Double.random(in: g.bounds.minX...g.bounds.maxX, using: &rng),
                        y: Double.random(in: g.bounds.minY...g.bounds.maxY, using: &rng))
                    let d = g.layer.captureDevicePointConverted(fromLayerPoint: l)
                    #expect(d.x >= -1e-9 && d.x <= 1 + 1e-9 && d.y >= -1e-9 && d.y <= 1 + 1e-9)
                }
            }
        }
    }

    /// Rotation keeps a polygon's winding; mirroring reverses it.
    @Test func mirroringReversesWindingRotationKeepsIt() throws {
        var rng = SplitMix64(seed: 0x5EED_0006)
        for _ in 0..<Self.geometries {
            let g = try PreviewLayerRandomGeometry(using: &rng)
            let triangle = (0..<3).map { _ in g.randomDevicePoint(using: &rng) }
            let before = previewLayerSignedArea(triangle)
            guard abs(before) > 1e-6 else { continue }
            let after = previewLayerSignedArea(triangle.map(g.layer.layerPointConverted(fromCaptureDevicePoint:)))
            #expect((after > 0) == ((before > 0) != g.mirrored))
        }
    }
}
