import Foundation

/// Where an image drawn into a test or benchmark frame goes (package-internal: the tests and
/// `Tools/Bench` place generated codes with it; not part of CaptureKitTesting's API).
///
/// Threading: stateless; call from any thread.
package enum Placement {
    /// The corners of `rect` (clockwise from its top-left) and where they land when `rect` is
    /// scaled by `scale` and turned by `degrees` about its middle, which moves to `centre`: the
    /// two point lists `CodeImaging.homography(from:to:)` takes.
    package static func turned(_ rect: CGRect, scale: Double, degrees: Double, centre: CGPoint) -> (from: [CGPoint], to: [CGPoint]) {
        let from = [
            CGPoint(x: rect.minX, y: rect.minY), CGPoint(x: rect.maxX, y: rect.minY),
            CGPoint(x: rect.maxX, y: rect.maxY), CGPoint(x: rect.minX, y: rect.maxY),
        ]
        let a = degrees * Double.pi / 180
        let to = from.map { p in
            let u = (p.x - rect.midX) * scale, v = (p.y - rect.midY) * scale
            return CGPoint(x: centre.x + u * cos(a) - v * sin(a), y: centre.y + u * sin(a) + v * cos(a))
        }
        return (from, to)
    }
}
