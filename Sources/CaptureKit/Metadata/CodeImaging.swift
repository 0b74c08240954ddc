import CVBridge
import Foundation
import Synchronization

/// The image operations the code detector and the code test corpus share, over CVBridge's
/// OpenCV calls. Every result is a new tightly packed `PixelBuffer` (recycled through
/// `scratch` while a detector runs).
///
/// Threading: stateless; call from any thread (each input buffer must not be written meanwhile).
enum CodeImaging {
    /// Where the images of one detection come from: inside `CodeDetector.detect`, the
    /// detector's scratch pools (frame, half and quarter size recycled from frame to frame);
    /// elsewhere nil, and every image is a new allocation.
    @TaskLocal static var scratch: CodeScratch?

    /// A new image for a result: from `scratch` when it pools that size, else allocated.
    static func make(width: Int, height: Int, pixelFormat: PixelFormat) throws(CaptureError) -> PixelBuffer {
        if let scratch, let pool = scratch.pool(width: width, height: height, pixelFormat: pixelFormat) {
            return try pool.makeBuffer()
        }
        return try PixelBuffer(width: width, height: height, pixelFormat: pixelFormat)
    }

    /// An 8-bit gray copy of `buffer`, or `buffer` itself when it is already gray (`cvb_image_convert`).
    static func gray(_ buffer: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        if buffer.pixelFormat == .gray { return buffer }
        let out = try make(width: buffer.width, height: buffer.height, pixelFormat: .gray)
        var src = buffer.bridgeImage
        var dst = out.bridgeImage
        var err = cvb_error()
        try check(cvb_image_convert(&src, &dst, &err), err, "converting a \(buffer.pixelFormat) frame to gray")
        return out
    }

    /// A copy of the pixel rectangle `rect` (clipped to the buffer). GRAY, BGR and BGRA only.
    static func crop(_ buffer: PixelBuffer, _ rect: PixelRect) throws(CaptureError) -> PixelBuffer {
        let out = try make(width: rect.width, height: rect.height, pixelFormat: buffer.pixelFormat)
        var src = buffer.bridgeImage
        src.data = src.data! + (rect.y * buffer.bytesPerRow + rect.x * buffer.pixelFormat.packedBytesPerRow(width: 1))
        src.width = Int32(rect.width)
        src.height = Int32(rect.height)
        var dst = out.bridgeImage
        var err = cvb_error()
        try check(cvb_image_convert(&src, &dst, &err), err, "cropping a frame")
        return out
    }

    /// `buffer` resized to width×height (`cvb_image_resize_with`).
    static func resized(
        _ buffer: PixelBuffer, width: Int, height: Int, interpolation: Int32 = Int32(CVB_INTER_AREA)
    ) throws(CaptureError) -> PixelBuffer {
        let out = try make(width: width, height: height, pixelFormat: buffer.pixelFormat)
        var src = buffer.bridgeImage
        var dst = out.bridgeImage
        var err = cvb_error()
        try check(cvb_image_resize_with(&src, &dst, interpolation, &err), err, "resizing a frame")
        return out
    }

    /// `saturate(pixel * alpha + beta)` (`cvb_image_scale`); alpha -1, beta 255 inverts.
    static func scaled(_ buffer: PixelBuffer, alpha: Double, beta: Double) throws(CaptureError) -> PixelBuffer {
        let out = try make(width: buffer.width, height: buffer.height, pixelFormat: buffer.pixelFormat)
        var src = buffer.bridgeImage
        var dst = out.bridgeImage
        var err = cvb_error()
        try check(cvb_image_scale(&src, &dst, alpha, beta, &err), err, "scaling pixel values")
        return out
    }

    /// The negative image (light-on-dark codes become dark-on-light).
    static func inverted(_ buffer: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        try scaled(buffer, alpha: -1, beta: 255)
    }

    /// A 0/255 image (`cvb_image_threshold`).
    static func thresholded(
        _ buffer: PixelBuffer, kind: Int32, value: Double = 0, block: Int32 = 0
    ) throws(CaptureError) -> PixelBuffer {
        let out = try make(width: buffer.width, height: buffer.height, pixelFormat: .gray)
        var src = buffer.bridgeImage
        var dst = out.bridgeImage
        var err = cvb_error()
        try check(cvb_image_threshold(&src, &dst, kind, value, block, &err), err, "binarising an image")
        return out
    }

    /// Unsharp-masked copy (`cvb_image_unsharp`).
    static func sharpened(_ buffer: PixelBuffer, sigma: Double, amount: Double) throws(CaptureError) -> PixelBuffer {
        let out = try make(width: buffer.width, height: buffer.height, pixelFormat: .gray)
        var src = buffer.bridgeImage
        var dst = out.bridgeImage
        var err = cvb_error()
        try check(cvb_image_unsharp(&src, &dst, sigma, amount, &err), err, "sharpening an image")
        return out
    }

    /// Gaussian-blurred copy (`cvb_image_gaussian_blur`).
    static func blurred(_ buffer: PixelBuffer, sigma: Double) throws(CaptureError) -> PixelBuffer {
        let out = try make(width: buffer.width, height: buffer.height, pixelFormat: buffer.pixelFormat)
        var src = buffer.bridgeImage
        var dst = out.bridgeImage
        var err = cvb_error()
        try check(cvb_image_gaussian_blur(&src, &dst, sigma, &err), err, "blurring an image")
        return out
    }

    /// Adds seeded zero-mean Gaussian noise in place (`cvb_image_add_noise`).
    static func addNoise(_ buffer: PixelBuffer, seed: UInt64, standardDeviation: Double) throws(CaptureError) {
        var dst = buffer.bridgeImage
        var err = cvb_error()
        try check(cvb_image_add_noise(&dst, seed, standardDeviation, &err), err, "adding noise")
    }

    /// The homography taking the four `from` points onto the four `to` points
    /// (`cvb_perspective_transform`).
    static func homography(from: [CGPoint], to: [CGPoint]) throws(CaptureError) -> Homography {
        precondition(from.count == 4 && to.count == 4, "a homography needs four point pairs")
        let a = from.flatMap { [Float($0.x), Float($0.y)] }
        let b = to.flatMap { [Float($0.x), Float($0.y)] }
        var m = [Double](repeating: 0, count: 9)
        var err = cvb_error()
        try check(cvb_perspective_transform(a, b, &m, &err), err, "computing a perspective transform")
        return Homography(m: m)
    }

    /// Warps `source` through `homography` into `destination` in place (`cvb_image_warp_perspective`).
    static func warp(
        _ source: PixelBuffer, into destination: PixelBuffer, homography: Homography,
        interpolation: Int32 = Int32(CVB_INTER_LINEAR), border: Int32 = Int32(CVB_BORDER_TRANSPARENT),
        borderValue: UInt8 = 255
    ) throws(CaptureError) {
        var src = source.bridgeImage
        var dst = destination.bridgeImage
        var err = cvb_error()
        try check(
            cvb_image_warp_perspective(&src, &dst, homography.m, interpolation, border, borderValue, &err), err,
            "warping an image")
    }

    /// QR-like quadrilaterals OpenCV's localiser finds (`cvb_qr_locate`), in `buffer`'s pixels,
    /// each as four points in OpenCV's order.
    static func locateQRCodes(_ buffer: PixelBuffer, multiple: Bool) throws(CaptureError) -> [[CGPoint]] {
        let capacity = 16
        var quads = [Float](repeating: 0, count: capacity * 8)
        var src = buffer.bridgeImage
        var err = cvb_error()
        let n = cvb_qr_locate(&src, multiple ? 1 : 0, &quads, Int32(capacity), &err)
        try check(n < 0 ? -1 : 0, err, "locating QR codes")
        return (0..<min(Int(n), capacity)).map { i in
            (0..<4).map { k in CGPoint(x: Double(quads[i * 8 + k * 2]), y: Double(quads[i * 8 + k * 2 + 1])) }
        }
    }

    static func check(_ status: Int32, _ err: cvb_error, _ what: String) throws(CaptureError) {
        if status != 0 { throw CaptureError(.conversionFailed, "\(what) failed: \(err.text)") }
    }
}

/// A pixel rectangle inside an image.
struct PixelRect: Hashable, Sendable {
    var x: Int
    var y: Int
    var width: Int
    var height: Int
}

/// A 3×3 projective transform, row-major, as OpenCV's `getPerspectiveTransform` returns it.
struct Homography: Hashable, Sendable {
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

/// The scratch images of one code detector's frames: a pool per size for the sizes every frame
/// needs again (the frame's, half and quarter: gray copies, thresholded copies, reductions), so
/// a steady stream allocates none of them per frame. Crops, whose sizes follow the content,
/// are not pooled. Without it each 1280x720 frame allocated and freed several 0.2–0.9 MB
/// images on whichever thread ran it, and glibc's per-thread arenas grew with them.
///
/// Threading: thread-safe (a Mutex over the pools; buffers return to their pool from any thread).
final class CodeScratch: Sendable {
    private struct Key: Hashable {
        var width: Int, height: Int, format: Int32
    }
    private let pools = Mutex<[Key: PixelBufferPool]>([:])
    /// The pooled sizes, as [width, height] pairs.
    let sizes: Set<[Int]>

    /// Pools for frames of `frame` size scanned inside `scanned` (the region of interest, or
    /// the whole frame): those sizes, and the scanned area's half and quarter size.
    init(frame: (width: Int, height: Int), scanned: (width: Int, height: Int)) {
        sizes = [
            [frame.width, frame.height], [scanned.width, scanned.height], [scanned.width / 2, scanned.height / 2],
            [scanned.width / 4, scanned.height / 4],
        ]
    }

    /// The pool for that size, or nil when it is not one of the pooled sizes.
    func pool(width: Int, height: Int, pixelFormat: PixelFormat) -> PixelBufferPool? {
        guard sizes.contains([width, height]) else { return nil }
        let key = Key(width: width, height: height, format: pixelFormat.rawValue)
        return pools.withLock { pools in
            if let pool = pools[key] { return pool }
            let pool = PixelBufferPool(width: width, height: height, pixelFormat: pixelFormat, maximumIdleBuffers: 4)
            pools[key] = pool
            return pool
        }
    }
}
