import CVBridge
import Foundation

/// The image operations CaptureKit's sources and outputs need, over CVBridge: conversions,
/// transforms, drawing, decoding and measuring. Each names the C call it wraps; failures
/// become `CaptureError`s through `CaptureError(_:_:bridge:)`, with `what` naming the
/// caller's operation.
///
/// Threading: stateless; call from any thread. A buffer being written must not be read
/// elsewhere at the same time (the `PixelBuffer` rule).
package enum Imaging {
    /// Converts `source` into `destination`'s format; same size (`cvb_image_convert`, `cv::cvtColor`).
    package static func convert(
        _ source: PixelBuffer, into destination: PixelBuffer, _ what: @autoclosure () -> String
    ) throws(CaptureError) {
        try bridgeCall(.conversionFailed, what()) { err in
            PixelBuffer.withBridgeImages(source, destination) { cvb_image_convert(&$0, &$1, &err) }
        }
    }

    /// Rotates `source` clockwise by 0/90/180/270 degrees, then mirrors it left-right when
    /// `mirrored`, into `destination` of the rotated size (`cvb_image_rotate_mirror`).
    package static func rotateMirror(
        _ source: PixelBuffer, into destination: PixelBuffer, degrees: Int32, mirrored: Bool,
        _ what: @autoclosure () -> String
    ) throws(CaptureError) {
        try bridgeCall(.conversionFailed, what()) { err in
            PixelBuffer.withBridgeImages(source, destination) {
                cvb_image_rotate_mirror(&$0, &$1, degrees, mirrored ? 1 : 0, &err)
            }
        }
    }

    /// Scales `source` to `destination`'s size, area-averaging when shrinking and bilinear
    /// otherwise (`cvb_image_resize`, `PixelBuffer.resizeInterpolation`).
    package static func resize(
        _ source: PixelBuffer, into destination: PixelBuffer, _ what: @autoclosure () -> String
    ) throws(CaptureError) {
        try bridgeCall(.conversionFailed, what()) { err in
            PixelBuffer.withBridgeImages(source, destination) {
                cvb_image_resize(&$0, &$1, PixelBuffer.resizeInterpolation($0, to: $1), &err)
            }
        }
    }

    /// Fills the whole of `destination` with one colour (`cvb_image_fill`).
    package static func fill(
        _ destination: PixelBuffer, red: UInt8, green: UInt8, blue: UInt8, _ what: @autoclosure () -> String
    ) throws(CaptureError) {
        try bridgeCall(.conversionFailed, what()) { err in
            destination.withBridgeImage { cvb_image_fill(&$0, blue, green, red, &err) }
        }
    }

    /// Fills a rectangle of `destination`, clipped to it (`cvb_image_fill_rect`).
    package static func fill(
        _ destination: PixelBuffer, x: Int, y: Int, width: Int, height: Int, red: UInt8, green: UInt8, blue: UInt8,
        _ what: @autoclosure () -> String
    ) throws(CaptureError) {
        try bridgeCall(.conversionFailed, what()) { err in
            destination.withBridgeImage {
                cvb_image_fill_rect(&$0, Int32(x), Int32(y), Int32(width), Int32(height), blue, green, red, &err)
            }
        }
    }

    /// Fills `destination` with seeded Gaussian noise (`cvb_image_fill_noise`).
    package static func fillNoise(
        _ destination: PixelBuffer, seed: UInt64, mean: Double, standardDeviation: Double,
        _ what: @autoclosure () -> String
    ) throws(CaptureError) {
        try bridgeCall(.conversionFailed, what()) { err in
            destination.withBridgeImage { cvb_image_fill_noise(&$0, seed, mean, standardDeviation, &err) }
        }
    }

    /// Draws `source` scaled to `width`×`height` with its top-left at (`x`, `y`) in
    /// `destination`, clipped (`cvb_image_blit`; interpolation from `resizeInterpolation`).
    package static func blit(
        _ source: PixelBuffer, into destination: PixelBuffer, x: Int, y: Int, width: Int, height: Int,
        _ what: @autoclosure () -> String
    ) throws(CaptureError) {
        let interpolation = PixelBuffer.resizeInterpolation(
            width: source.width, height: source.height, toWidth: width, toHeight: height)
        try bridgeCall(.conversionFailed, what()) { err in
            PixelBuffer.withBridgeImages(source, destination) { (s, dst) in
                cvb_image_blit(&dst, &s, Int32(x), Int32(y), Int32(width), Int32(height), interpolation, &err)
            }
        }
    }

    /// Variance of the Laplacian over `box` of `source` (`cvb_image_laplacian_variance`), a
    /// focus measure. BGR, BGRA or gray.
    package static func laplacianVariance(
        _ source: PixelBuffer, in box: PixelRect, _ what: @autoclosure () -> String
    ) throws(CaptureError) -> Double {
        var variance = 0.0
        try bridgeCall(.conversionFailed, what()) { err in
            source.withBridgeImage {
                cvb_image_laplacian_variance(
                    &$0, Int32(box.x), Int32(box.y), Int32(box.width), Int32(box.height), &variance, &err)
            }
        }
        return variance
    }

    /// Decodes an image file as BGR or gray (`cvb_image_read`, `cv::imread`, which applies EXIF
    /// orientation). The caller checks the file first (size, kind): this decodes whatever it is given.
    package static func read(
        _ path: String, as format: PixelFormat, _ what: @autoclosure () -> String
    ) throws(CaptureError) -> PixelBuffer {
        var err = cvb_error()
        guard let mat = FilePathBytes.withCString(path, { cvb_image_read($0, format.rawValue, &err) }) else {
            throw CaptureError(.unreadableImage, what(), bridge: err, path: path)
        }
        return PixelBuffer(ownedMat: mat)
    }

    /// Decodes an encoded image (a V4L2 MJPEG frame) into `destination`, which has the encoded
    /// image's size (`cvb_image_decode_into`, `cv::imdecode` with a destination), so no frame
    /// buffer is allocated per frame.
    package static func decode(
        _ bytes: UnsafeRawBufferPointer, into destination: PixelBuffer, _ what: @autoclosure () -> String
    ) throws(CaptureError) {
        try bridgeCall(.decodeFailed, what()) { err in
            destination.withBridgeImage {
                cvb_image_decode_into(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &$0, &err)
            }
        }
    }

    /// `decode(_:into:_:)` for bytes held in a `Data` (a JPEG file, a kept camera frame).
    package static func decode(
        _ data: Data, into destination: PixelBuffer, _ what: @autoclosure () -> String
    ) throws(CaptureError) {
        let failure: CaptureError? = data.withUnsafeBytes { bytes in
            do throws(CaptureError) { try decode(bytes, into: destination, what()) } catch { return error }
            return nil
        }
        if let failure { throw failure }
    }

    /// A QR symbol for `payload`, one gray pixel per module, quiet zone included
    /// (`cvb_qr_encode`, `cv::QRCodeEncoder`). `version` 0 lets the encoder choose;
    /// `correction` is 0 = L, 1 = M, 2 = Q, 3 = H.
    package static func qrSymbol(payload: [UInt8], version: Int32, correction: Int32) throws(CaptureError) -> PixelBuffer {
        var err = cvb_error()
        let mat = payload.withUnsafeBufferPointer { cvb_qr_encode($0.baseAddress, $0.count, version, correction, &err) }
        guard let mat else {
            throw CaptureError(.invalidConfiguration, "cannot encode a \(payload.count)-byte QR code", bridge: err)
        }
        return PixelBuffer(ownedMat: mat)
    }
}

/// OpenCV's interpolation flags as the shim takes them (`CVB_INTER_*`, `cv::InterpolationFlags`),
/// for callers that choose one themselves.
package enum Interpolation {
    package static let nearest = Int32(CVB_INTER_NEAREST)
    package static let linear = Int32(CVB_INTER_LINEAR)
    package static let area = Int32(CVB_INTER_AREA)
}
