import CVBridge
import Foundation

/// Encodes frames as image files (`cv::imencode` via `cvb_image_encode`).
///
/// Threading: stateless; call from any thread.
public enum ImageFile {
    /// JPEG (with a quality 0…100) or PNG.
    public enum Format: Sendable, Hashable {
        case jpeg(quality: Int)
        case png
    }

    /// The encoded bytes of `buffer` (BGR or gray).
    public static func encode(_ buffer: PixelBuffer, as format: Format) throws(CaptureError) -> [UInt8] {
        var err = cvb_error()
        let (ext, params): (String, [Int32]) =
            switch format {
            case .jpeg(let quality): (".jpg", [1 /* IMWRITE_JPEG_QUALITY */, Int32(max(0, min(100, quality)))])
            case .png: (".png", [])
            }
        let mat = buffer.withBridgeImage { image in
            params.withUnsafeBufferPointer { p in cvb_image_encode(&image, ext, p.baseAddress, Int32(p.count), &err) }
        }
        guard let mat else { throw CaptureError(.conversionFailed, "cannot encode the frame as \(ext)", bridge: err) }
        defer { cvb_mat_release(mat) }
        let bytes = cvb_mat_image(mat).data!
        return Array(UnsafeBufferPointer(start: bytes, count: cvb_mat_byte_length(mat)))
    }

    /// Writes `buffer` to `path`, choosing the format from the extension (.png, else JPEG at 92).
    /// Not atomic: for photos use the photo output, which writes atomically.
    public static func write(_ buffer: PixelBuffer, to path: String) throws(CaptureError) {
        let format: Format = path.lowercased().hasSuffix(".png") ? .png : .jpeg(quality: 92)
        let bytes = try encode(buffer, as: format)
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw CaptureError(.writeFailed, "cannot write \(path): check the folder exists and is writable", path: path)
        }
    }
}
