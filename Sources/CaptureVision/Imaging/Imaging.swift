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

    /// Multiplies every channel of `buffer` by `gain`, saturating, in place (`cvb_image_scale`,
    /// `cv::Mat::convertTo`): a light switched on or off.
    package static func scale(_ buffer: PixelBuffer, by gain: Double, _ what: @autoclosure () -> String) throws(CaptureError) {
        try bridgeCall(.conversionFailed, what()) { err in
            buffer.withBridgeImage { image in
                var source = image  // the same pixels: convertTo works in place
                return cvb_image_scale(&source, &image, gain, 0, &err)
            }
        }
    }

    /// Adds seeded Gaussian noise with zero mean to `buffer`, saturating, in place
    /// (`cvb_image_add_noise`, `cv::RNG::fill` + `cv::add`): a sensor's temporal noise.
    package static func addNoise(
        _ buffer: PixelBuffer, seed: UInt64, standardDeviation: Double, _ what: @autoclosure () -> String
    ) throws(CaptureError) {
        try bridgeCall(.conversionFailed, what()) { err in
            buffer.withBridgeImage { cvb_image_add_noise(&$0, seed, standardDeviation, &err) }
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

    /// Decodes an image file as BGR or gray, upright by its EXIF orientation, as `cv::imread`
    /// gives it: JPEG and PNG straight through libjpeg-turbo and libpng (`cvb_still_read`, the
    /// orientation applied by `rotateMirror`), every other format through OpenCV's imgcodecs
    /// (`cvb_image_read`, `cv::imread`; its module loads on first use). An image over
    /// `maximumPixels` fails before its pixels are allocated (JPEG and PNG; for the other formats
    /// the caller checks the header first). This decodes whatever it is given: the caller checks
    /// that the file is one to decode.
    package static func read(
        _ path: String, as format: PixelFormat, maximumPixels: Int = .max, _ what: @autoclosure () -> String
    ) throws(CaptureError) -> PixelBuffer {
        var err = cvb_error()
        guard let codec = StillCodec.of(file: path) else {
            guard let mat = FilePathBytes.withCString(path, { cvb_image_read($0, format.rawValue, &err) }) else {
                throw CaptureError(.unreadableImage, what(), bridge: err, path: path)
            }
            return PixelBuffer(ownedMat: mat)
        }
        var exif: OpaquePointer?
        guard
            let mat = FilePathBytes.withCString(path, {
                cvb_still_read($0, codec, format.rawValue, UInt64(max(0, maximumPixels)), &exif, &err)
            })
        else { throw CaptureError(.unreadableImage, what(), bridge: err, path: path) }
        let decoded = PixelBuffer(ownedMat: mat)
        guard let transform = exif.flatMap(orientation(releasing:))?.transform else { return decoded }
        let quarter = transform.degrees == 90 || transform.degrees == 270
        let upright = try PixelBuffer(
            width: quarter ? decoded.height : decoded.width, height: quarter ? decoded.width : decoded.height,
            pixelFormat: decoded.pixelFormat)
        try rotateMirror(decoded, into: upright, degrees: transform.degrees, mirrored: transform.mirrored, what())
        return upright
    }

    /// Decodes an encoded image (a V4L2 MJPEG frame) into `destination`, which has the encoded
    /// image's size, so no frame buffer is allocated per frame, with the pixels `cv::imdecode`
    /// gives: JPEG and PNG straight through libjpeg-turbo and libpng (`cvb_still_decode_into`);
    /// other formats, and the rare frame that needs OpenCV's own handling (an EXIF orientation
    /// other than upright, a size other than the buffer's) through OpenCV's imgcodecs
    /// (`cvb_image_decode_into`, `cv::imdecode` with a destination; its module loads on first use).
    package static func decode(
        _ bytes: UnsafeRawBufferPointer, into destination: PixelBuffer, _ what: @autoclosure () -> String
    ) throws(CaptureError) {
        let start = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        if let codec = StillCodec.of(bytes: bytes) {
            var err = cvb_error()
            var exif: OpaquePointer?
            let status = destination.withBridgeImage { cvb_still_decode_into(start, bytes.count, codec, &$0, &exif, &err) }
            let upright = exif.flatMap(orientation(releasing:))?.transform == nil
            if status == 0 && upright { return }
            if status != 0 && err.code != Int32(CVB_ERROR_SIZE_DIFFERS) {
                throw CaptureError(.decodeFailed, what(), bridge: err)
            }
        }
        try bridgeCall(.decodeFailed, what()) { err in
            destination.withBridgeImage { cvb_image_decode_into(start, bytes.count, &$0, &err) }
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

    /// The orientation in an EXIF block the shim handed back, releasing the block.
    private static func orientation(releasing exif: OpaquePointer) -> ExifOrientation? {
        defer { cvb_mat_release(exif) }
        let bytes = Array(UnsafeBufferPointer(start: cvb_mat_image(exif).data, count: cvb_mat_byte_length(exif)))
        return ExifOrientation(exif: bytes)
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
