import CVBridge

/// The layout of pixels in a `PixelBuffer`. Values match `cvb_pixel_format` in CVBridge.
public enum PixelFormat: Int32, Sendable, CaseIterable, CustomStringConvertible {
    /// 8-bit blue, green, red, interleaved (OpenCV's native colour layout).
    case bgr = 0
    /// 8-bit luma only.
    case gray = 1
    /// Packed YUV 4:2:2 (`V4L2_PIX_FMT_YUYV`), the most common raw webcam format.
    case yuyv = 2
    /// YUV 4:2:0, a luma plane followed by interleaved chroma (`V4L2_PIX_FMT_NV12`).
    case nv12 = 3
    /// 8-bit blue, green, red, alpha.
    case bgra = 4

    /// Bytes a tightly packed frame of this size needs (`cvb_image_byte_count`).
    public func byteCount(width: Int, height: Int) -> Int {
        Int(cvb_image_byte_count(Int32(width), Int32(height), rawValue))
    }

    /// Bytes per row of a tightly packed frame (for NV12: the luma row).
    public func packedBytesPerRow(width: Int) -> Int {
        switch self {
        case .bgr: width * 3
        case .gray, .nv12: width
        case .yuyv: width * 2
        case .bgra: width * 4
        }
    }

    /// The four-character code V4L2 and containers use for this layout.
    public var fourCharacterCode: String {
        switch self {
        case .bgr: "BGR3"
        case .gray: "GREY"
        case .yuyv: "YUYV"
        case .nv12: "NV12"
        case .bgra: "BGR4"
        }
    }

    public var description: String {
        switch self {
        case .bgr: "BGR"
        case .gray: "gray"
        case .yuyv: "YUYV"
        case .nv12: "NV12"
        case .bgra: "BGRA"
        }
    }
}
