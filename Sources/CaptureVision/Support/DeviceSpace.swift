import Foundation

/// The pixels of one frame and device space, both ways: the one place where detectors,
/// trackers and outputs convert between them.
///
/// Device space is AVFoundation's metadata space: 0…1 on both axes, top-left origin, the
/// sensor's unrotated, unmirrored orientation. Pixel coordinates address pixel corners (pixel
/// (0, 0) covers 0…1 × 0…1, as ZBar and OpenCV report points), so the conversion is a plain
/// scale with no half-pixel shift.
///
/// Package-visible so CaptureKitTesting's corpus and the benchmarks share it.
///
/// Threading: a value type; use from any thread.
package struct DeviceSpace: Hashable, Sendable {
    /// The frame's width and height in pixels.
    package let width: Double
    package let height: Double

    /// The space of a `width` × `height` frame. A zero size is allowed (an empty frame):
    /// `wholePixels(_:)` gives nil, and device coordinates from it are not finite.
    package init(width: Int, height: Int) {
        self.width = Double(width)
        self.height = Double(height)
    }

    /// The space of `buffer`'s frame.
    package init(_ buffer: PixelBuffer) {
        self.init(width: buffer.width, height: buffer.height)
    }

    /// A pixel point in device space.
    package func devicePoint(fromPixel p: CGPoint) -> CGPoint {
        CGPoint(x: Double(p.x) / width, y: Double(p.y) / height)
    }

    /// A device-space point in pixels (not rounded, not clipped).
    package func pixelPoint(fromDevice p: CGPoint) -> CGPoint {
        CGPoint(x: Double(p.x) * width, y: Double(p.y) * height)
    }

    /// A pixel rectangle in device space.
    package func deviceRect(fromPixels r: CGRect) -> CGRect {
        CGRect(
            x: Double(r.minX) / width, y: Double(r.minY) / height,
            width: Double(r.width) / width, height: Double(r.height) / height)
    }

    /// A device-space rectangle in pixels (not rounded, not clipped).
    package func pixelRect(fromDevice r: CGRect) -> CGRect {
        CGRect(
            x: Double(r.minX) * width, y: Double(r.minY) * height,
            width: Double(r.width) * width, height: Double(r.height) * height)
    }

    /// The whole pixels a device-space rectangle touches, clipped to the frame (edges rounded
    /// outwards, so a region of interest never loses a partly covered pixel); nil when nothing
    /// of it lies inside the frame.
    package func wholePixels(_ r: CGRect) -> PixelRect? {
        let clipped = r.standardized.intersection(CGRect(x: 0, y: 0, width: 1, height: 1))
        guard !clipped.isNull else { return nil }
        let x0 = Int((Double(clipped.minX) * width).rounded(.down))
        let y0 = Int((Double(clipped.minY) * height).rounded(.down))
        let x1 = min(Int(width), Int((Double(clipped.maxX) * width).rounded(.up)))
        let y1 = min(Int(height), Int((Double(clipped.maxY) * height).rounded(.up)))
        guard x1 > x0, y1 > y0 else { return nil }
        return PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }

    /// The smallest rectangle holding every point (in whichever space the points are);
    /// `CGRect.null` for no points.
    package static func boundingBox(of points: [CGPoint]) -> CGRect {
        guard var x0 = points.first?.x, var y0 = points.first?.y else { return .null }
        var x1 = x0, y1 = y0
        for p in points.dropFirst() {
            x0 = min(x0, p.x)
            x1 = max(x1, p.x)
            y0 = min(y0, p.y)
            y1 = max(y1, p.y)
        }
        return CGRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }
}

/// A rectangle of whole pixels inside an image.
package struct PixelRect: Hashable, Sendable {
    package var x: Int
    package var y: Int
    package var width: Int
    package var height: Int

    /// A rectangle with its top-left corner at (`x`, `y`).
    package init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// The same rectangle as a `CGRect` in pixels.
    package var cgRect: CGRect { CGRect(x: x, y: y, width: width, height: height) }
}
