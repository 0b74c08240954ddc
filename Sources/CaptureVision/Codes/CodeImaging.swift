import CVBridge
import Foundation

/// The image operations the code detector and the code test corpus share, over CVBridge's
/// OpenCV calls. Every result is a new tightly packed `PixelBuffer`. Package-visible for
/// CaptureKitTesting's corpus, so the drawing it shares with the detector is not copied.
///
/// Threading: stateless; call from any thread (each input buffer must not be written meanwhile).
package enum CodeImaging {
    /// An 8-bit gray copy of `buffer`, or `buffer` itself when it is already gray (`cvb_image_convert`).
    package static func gray(_ buffer: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        if buffer.pixelFormat == .gray { return buffer }
        let out = try PixelBuffer(width: buffer.width, height: buffer.height, pixelFormat: .gray)
        var err = cvb_error()
        let status = PixelBuffer.withBridgeImages(buffer, out) { src, dst in cvb_image_convert(&src, &dst, &err) }
        try check(status, err, "converting a \(buffer.pixelFormat) frame to gray")
        return out
    }

    /// A copy of the pixel rectangle `rect` (clipped to the buffer). GRAY, BGR and BGRA only.
    static func crop(_ buffer: PixelBuffer, _ rect: PixelRect) throws(CaptureError) -> PixelBuffer {
        let out = try PixelBuffer(width: rect.width, height: rect.height, pixelFormat: buffer.pixelFormat)
        var err = cvb_error()
        let status = PixelBuffer.withBridgeImages(buffer, out) { src, dst in
            src.data = src.data! + (rect.y * buffer.bytesPerRow + rect.x * buffer.pixelFormat.packedBytesPerRow(width: 1))
            src.width = Int32(rect.width)
            src.height = Int32(rect.height)
            return cvb_image_convert(&src, &dst, &err)
        }
        try check(status, err, "cropping a frame")
        return out
    }

    /// `buffer` resized to width×height (`cvb_image_resize`).
    package static func resized(
        _ buffer: PixelBuffer, width: Int, height: Int, interpolation: Int32 = Int32(CVB_INTER_AREA)
    ) throws(CaptureError) -> PixelBuffer {
        let out = try PixelBuffer(width: width, height: height, pixelFormat: buffer.pixelFormat)
        var err = cvb_error()
        let status = PixelBuffer.withBridgeImages(buffer, out) { src, dst in cvb_image_resize(&src, &dst, interpolation, &err) }
        try check(status, err, "resizing a frame")
        return out
    }

    /// `buffer` at twice its width and height, bilinear (`cvb_image_resize`): where zxing-cpp
    /// 1.4's binarizer loses modules of a few soft pixels, twice the pixels keeps them.
    static func doubled(_ buffer: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        try resized(buffer, width: buffer.width * 2, height: buffer.height * 2, interpolation: Int32(CVB_INTER_LINEAR))
    }

    /// Each pixel the lightest of the 3×3 around it (pixels outside the image left out): dark
    /// shrunk by a pixel on every side, as a symbol printed with ink spread would have been
    /// printed without it. GRAY only; written here, not in the shim: it runs on stills under
    /// the gate's size, where a pass over the pixels costs little.
    static func darkShrunk(_ buffer: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        let w = buffer.width, h = buffer.height
        let across = try PixelBuffer(width: w, height: h, pixelFormat: .gray)
        let out = try PixelBuffer(width: w, height: h, pixelFormat: .gray)
        withExtendedLifetime((buffer, across, out)) {
            let src = buffer.baseAddress.assumingMemoryBound(to: UInt8.self)
            let mid = across.baseAddress.assumingMemoryBound(to: UInt8.self)
            let dst = out.baseAddress.assumingMemoryBound(to: UInt8.self)
            for y in 0..<h {
                let row = src + y * buffer.bytesPerRow, to = mid + y * across.bytesPerRow
                for x in 0..<w { to[x] = max(row[max(0, x - 1)], row[x], row[min(w - 1, x + 1)]) }
            }
            for y in 0..<h {
                let up = mid + max(0, y - 1) * across.bytesPerRow, row = mid + y * across.bytesPerRow
                let down = mid + min(h - 1, y + 1) * across.bytesPerRow, to = dst + y * out.bytesPerRow
                for x in 0..<w { to[x] = max(up[x], row[x], down[x]) }
            }
        }
        return out
    }

    /// `saturate(pixel * alpha + beta)` (`cvb_image_scale`); alpha -1, beta 255 inverts.
    package static func scaled(_ buffer: PixelBuffer, alpha: Double, beta: Double) throws(CaptureError) -> PixelBuffer {
        let out = try PixelBuffer(width: buffer.width, height: buffer.height, pixelFormat: buffer.pixelFormat)
        var err = cvb_error()
        let status = PixelBuffer.withBridgeImages(buffer, out) { src, dst in cvb_image_scale(&src, &dst, alpha, beta, &err) }
        try check(status, err, "scaling pixel values")
        return out
    }

    /// The negative image (light-on-dark codes become dark-on-light).
    package static func inverted(_ buffer: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        try scaled(buffer, alpha: -1, beta: 255)
    }

    /// A 0/255 image (`cvb_image_threshold`).
    static func thresholded(_ buffer: PixelBuffer, kind: Int32, value: Double = 0) throws(CaptureError) -> PixelBuffer {
        let out = try PixelBuffer(width: buffer.width, height: buffer.height, pixelFormat: .gray)
        var err = cvb_error()
        let status = PixelBuffer.withBridgeImages(buffer, out) { src, dst in cvb_image_threshold(&src, &dst, kind, value, &err) }
        try check(status, err, "binarising an image")
        return out
    }

    /// The mean of the `block`×`block` window around each pixel (`cvb_image_local_mean`). GRAY only.
    static func localMean(_ buffer: PixelBuffer, block: Int32) throws(CaptureError) -> PixelBuffer {
        let out = try PixelBuffer(width: buffer.width, height: buffer.height, pixelFormat: .gray)
        var err = cvb_error()
        let status = PixelBuffer.withBridgeImages(buffer, out) { src, dst in cvb_image_local_mean(&src, &dst, block, &err) }
        try check(status, err, "averaging an image locally")
        return out
    }

    /// The `window`-pixel local mean of the image with each flat `block`-pixel block (levels
    /// spanning at most `flatRange`) that is lighter than the textured blocks within a window of
    /// it counted as their level, the midpoint of their darkest and lightest pixels
    /// (`cvb_image_textured_mean`).
    static func texturedMean(_ buffer: PixelBuffer, block: Int32, window: Int32, flatRange: Int32) throws(CaptureError)
        -> PixelBuffer
    {
        let out = try PixelBuffer(width: buffer.width, height: buffer.height, pixelFormat: .gray)
        var err = cvb_error()
        let status = PixelBuffer.withBridgeImages(buffer, out) { src, dst in
            cvb_image_textured_mean(&src, &dst, block, window, flatRange, &err)
        }
        try check(status, err, "averaging an image's textured blocks locally")
        return out
    }

    /// 255 where a pixel is above its local `mean` minus `offset`, else 0 (`cvb_image_above_mean`):
    /// an adaptive threshold whose mean is computed once for several offsets.
    static func aboveMean(_ buffer: PixelBuffer, _ mean: PixelBuffer, offset: Double) throws(CaptureError) -> PixelBuffer {
        let out = try PixelBuffer(width: buffer.width, height: buffer.height, pixelFormat: .gray)
        var err = cvb_error()
        let status = PixelBuffer.withBridgeImages(buffer, out) { src, dst in
            mean.withBridgeImage { avg in cvb_image_above_mean(&src, &avg, &dst, offset, &err) }
        }
        try check(status, err, "comparing an image with its local mean")
        return out
    }

    /// Unsharp-masked copy (`cvb_image_unsharp`).
    static func sharpened(_ buffer: PixelBuffer, sigma: Double, amount: Double) throws(CaptureError) -> PixelBuffer {
        let out = try PixelBuffer(width: buffer.width, height: buffer.height, pixelFormat: .gray)
        var err = cvb_error()
        let status = PixelBuffer.withBridgeImages(buffer, out) { src, dst in cvb_image_unsharp(&src, &dst, sigma, amount, &err) }
        try check(status, err, "sharpening an image")
        return out
    }

    /// Gaussian-blurred copy (`cvb_image_gaussian_blur`).
    package static func blurred(_ buffer: PixelBuffer, sigma: Double) throws(CaptureError) -> PixelBuffer {
        let out = try PixelBuffer(width: buffer.width, height: buffer.height, pixelFormat: buffer.pixelFormat)
        var err = cvb_error()
        let status = PixelBuffer.withBridgeImages(buffer, out) { src, dst in cvb_image_gaussian_blur(&src, &dst, sigma, &err) }
        try check(status, err, "blurring an image")
        return out
    }

    /// Adds seeded zero-mean Gaussian noise in place (`cvb_image_add_noise`).
    package static func addNoise(_ buffer: PixelBuffer, seed: UInt64, standardDeviation: Double) throws(CaptureError) {
        var err = cvb_error()
        let status = buffer.withBridgeImage { dst in cvb_image_add_noise(&dst, seed, standardDeviation, &err) }
        try check(status, err, "adding noise")
    }

    /// The homography taking the four `from` points onto the four `to` points
    /// (`cvb_perspective_transform`).
    package static func homography(from: [CGPoint], to: [CGPoint]) throws(CaptureError) -> Homography {
        precondition(from.count == 4 && to.count == 4, "a homography needs four point pairs")
        let a = from.flatMap { [Float($0.x), Float($0.y)] }
        let b = to.flatMap { [Float($0.x), Float($0.y)] }
        var m = [Double](repeating: 0, count: 9)
        var err = cvb_error()
        try check(cvb_perspective_transform(a, b, &m, &err), err, "computing a perspective transform")
        return Homography(m: m)
    }

    /// Warps `source` through `homography` into `destination` in place (`cvb_image_warp_perspective`).
    package static func warp(
        _ source: PixelBuffer, into destination: PixelBuffer, homography: Homography,
        interpolation: Int32 = Int32(CVB_INTER_LINEAR), border: Int32 = Int32(CVB_BORDER_TRANSPARENT),
        borderValue: UInt8 = 255
    ) throws(CaptureError) {
        var err = cvb_error()
        let status = PixelBuffer.withBridgeImages(source, destination) { src, dst in
            cvb_image_warp_perspective(&src, &dst, homography.m, interpolation, border, borderValue, &err)
        }
        try check(status, err, "warping an image")
    }

    /// `buffer` inside a border `margin` pixels wide of the level `value`
    /// (`cvb_image_warp_perspective` with a translation, nearest neighbour: an exact copy).
    static func padded(_ buffer: PixelBuffer, by margin: Int, value: UInt8) throws(CaptureError) -> PixelBuffer {
        let out = try PixelBuffer(width: buffer.width + 2 * margin, height: buffer.height + 2 * margin, pixelFormat: buffer.pixelFormat)
        try warp(
            buffer, into: out, homography: .scaling(1, 1, offsetX: Double(margin), offsetY: Double(margin)),
            interpolation: Int32(CVB_INTER_NEAREST), border: Int32(CVB_BORDER_CONSTANT), borderValue: value)
        return out
    }

    /// QR-like quadrilaterals OpenCV's localiser finds (`cvb_qr_locate`), in `buffer`'s pixels,
    /// each as four points in OpenCV's order.
    static func locateQRCodes(_ buffer: PixelBuffer, multiple: Bool) throws(CaptureError) -> [[CGPoint]] {
        let capacity = 16
        var quads = [Float](repeating: 0, count: capacity * 8)
        var err = cvb_error()
        let n = buffer.withBridgeImage { src in cvb_qr_locate(&src, multiple ? 1 : 0, &quads, Int32(capacity), &err) }
        try check(n < 0 ? -1 : 0, err, "locating QR codes")
        return (0..<min(Int(n), capacity)).map { i in
            (0..<4).map { k in CGPoint(x: Double(quads[i * 8 + k * 2]), y: Double(quads[i * 8 + k * 2 + 1])) }
        }
    }

    package static func check(_ status: Int32, _ err: cvb_error, _ what: String) throws(CaptureError) {
        if status != 0 { throw CaptureError(.conversionFailed, "\(what) failed", bridge: err) }
    }
}

/// A 3×3 projective transform, row-major, as OpenCV's `getPerspectiveTransform` returns it.
package struct Homography: Hashable, Sendable {
    var m: [Double]

    /// The identity followed by a scale and an offset: `p * scale + offset`.
    static func scaling(_ sx: Double, _ sy: Double, offsetX: Double = 0, offsetY: Double = 0) -> Homography {
        Homography(m: [sx, 0, offsetX, 0, sy, offsetY, 0, 0, 1])
    }

    /// Where `p` lands.
    func apply(_ p: CGPoint) -> CGPoint {
        let x = Double(p.x), y = Double(p.y)
        let w = m[6] * x + m[7] * y + m[8]
        return CGPoint(x: (m[0] * x + m[1] * y + m[2]) / w, y: (m[3] * x + m[4] * y + m[5]) / w)
    }
}
