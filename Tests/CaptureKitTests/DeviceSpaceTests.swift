import Foundation
import Testing

@testable import CaptureKit
@testable import CaptureVision

/// The one pixel ↔ device-space conversion: round trips, clipping, degenerate sizes, edges.
@Suite struct DeviceSpaceTests {
    let space = DeviceSpace(width: 640, height: 480)

    @Test func pointsAndRectsRoundTrip() {
        for p in [CGPoint(x: 0, y: 0), CGPoint(x: 17.25, y: 301.5), CGPoint(x: 640, y: 480), CGPoint(x: -3, y: 500)] {
            let back = space.pixelPoint(fromDevice: space.devicePoint(fromPixel: p))
            #expect(abs(back.x - p.x) < 1e-9 && abs(back.y - p.y) < 1e-9, "\(p) came back as \(back)")
        }
        let r = CGRect(x: 64, y: 48, width: 320, height: 120)
        #expect(space.deviceRect(fromPixels: r) == CGRect(x: 0.1, y: 0.1, width: 0.5, height: 0.25))
        #expect(space.pixelRect(fromDevice: space.deviceRect(fromPixels: r)) == r)
    }

    /// Pixel coordinates address corners: the frame's far corner is device (1, 1), with no
    /// half-pixel shift.
    @Test func frameEdgesAreDeviceEdges() {
        #expect(space.devicePoint(fromPixel: CGPoint(x: 640, y: 480)) == CGPoint(x: 1, y: 1))
        #expect(space.devicePoint(fromPixel: CGPoint(x: 320, y: 0)) == CGPoint(x: 0.5, y: 0))
        #expect(space.pixelPoint(fromDevice: CGPoint(x: 0, y: 1)) == CGPoint(x: 0, y: 480))
        #expect(space.wholePixels(CGRect(x: 0, y: 0, width: 1, height: 1)) == PixelRect(x: 0, y: 0, width: 640, height: 480))
    }

    @Test func wholePixelsRoundOutwardsAndClip() {
        // 0.101 × 640 = 64.64 → 64; 0.499 × 640 = 319.36 → 320.
        #expect(
            space.wholePixels(CGRect(x: 0.101, y: 0.101, width: 0.398, height: 0.398))
                == PixelRect(x: 64, y: 48, width: 256, height: 192))
        // Half outside on the top-left, and beyond the bottom-right: only the inside part counts.
        #expect(
            space.wholePixels(CGRect(x: -0.5, y: -0.5, width: 1, height: 1))
                == PixelRect(x: 0, y: 0, width: 320, height: 240))
        #expect(
            space.wholePixels(CGRect(x: 0.75, y: 0.75, width: 2, height: 2))
                == PixelRect(x: 480, y: 360, width: 160, height: 120))
        // A negative size is the same rectangle drawn the other way.
        #expect(space.wholePixels(CGRect(x: 0.5, y: 0.5, width: -0.5, height: -0.5)) == space.wholePixels(
            CGRect(x: 0, y: 0, width: 0.5, height: 0.5)))
    }

    @Test func nothingInsideGivesNil() {
        #expect(space.wholePixels(CGRect(x: 1.5, y: 0, width: 0.2, height: 0.2)) == nil)
        #expect(space.wholePixels(CGRect(x: -0.3, y: 0.2, width: 0.2, height: 0.2)) == nil)
        #expect(space.wholePixels(.null) == nil)
        // A line on a pixel boundary covers no pixel; off a boundary it touches one column.
        #expect(space.wholePixels(CGRect(x: 0.5, y: 0.2, width: 0, height: 0.2)) == nil)
        #expect(space.wholePixels(CGRect(x: 0.5005, y: 0.2, width: 0, height: 0.2))?.width == 1)
        // Touching the frame's edge from outside shares no area.
        #expect(space.wholePixels(CGRect(x: 1, y: 0, width: 0.5, height: 1)) == nil)
    }

    @Test func degenerateFrameSizes() {
        let empty = DeviceSpace(width: 0, height: 0)
        #expect(empty.wholePixels(CGRect(x: 0, y: 0, width: 1, height: 1)) == nil)
        #expect(empty.pixelRect(fromDevice: CGRect(x: 0.2, y: 0.2, width: 0.5, height: 0.5)) == .zero)
        let line = DeviceSpace(width: 1, height: 100)
        #expect(line.wholePixels(CGRect(x: 0.3, y: 0.25, width: 0.1, height: 0.5)) == PixelRect(x: 0, y: 25, width: 1, height: 50))
        let buffer = try? PixelBuffer(width: 32, height: 8, pixelFormat: .gray)
        #expect(buffer.map(DeviceSpace.init) == DeviceSpace(width: 32, height: 8))
    }

    @Test func boundingBoxOfPoints() {
        let quad = [CGPoint(x: 5, y: 1), CGPoint(x: 9, y: 4), CGPoint(x: 6, y: 8), CGPoint(x: 2, y: 5)]
        #expect(DeviceSpace.boundingBox(of: quad) == CGRect(x: 2, y: 1, width: 7, height: 7))
        #expect(DeviceSpace.boundingBox(of: [CGPoint(x: 3, y: 4)]) == CGRect(x: 3, y: 4, width: 0, height: 0))
        #expect(DeviceSpace.boundingBox(of: []).isNull)
        // Boxes commute with the conversion: the box of device points is the device box of pixels.
        let device = space.deviceRect(fromPixels: DeviceSpace.boundingBox(of: quad))
        let viaDevice = DeviceSpace.boundingBox(of: quad.map(space.devicePoint(fromPixel:)))
        #expect(abs(device.minX - viaDevice.minX) < 1e-12 && abs(device.maxY - viaDevice.maxY) < 1e-12)
    }
}
