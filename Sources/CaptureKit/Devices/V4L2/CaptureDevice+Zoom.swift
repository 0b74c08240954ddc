import Foundation

/// Zoom (`AVCaptureDevice.videoZoomFactor`).
///
/// Wraps `V4L2_CID_ZOOM_ABSOLUTE` (`zoom_absolute`) through `ioctl(VIDIOC_G_CTRL)` /
/// `ioctl(VIDIOC_S_CTRL)`.
///
/// Threading: reads are thread-safe; setters also require `lockForConfiguration()`.
extension CaptureDevice {
    /// The zoom factor (`videoZoomFactor`): `zoom_absolute` over its minimum (1 = widest). For a
    /// control whose minimum is 0, 100 units count as 1×, as on most UVC cameras.
    public var videoZoomFactor: Double {
        get throws(CaptureError) {
            let range = try controlRange(.zoomAbsolute, "a zoom control")
            return Self.zoomFactor(try value(of: .zoomAbsolute), range)
        }
    }

    /// The largest zoom factor.
    public var maxAvailableVideoZoomFactor: Double {
        get throws(CaptureError) {
            let range = try controlRange(.zoomAbsolute, "a zoom control")
            return Self.zoomFactor(range.max, range)
        }
    }

    static func zoomFactor(_ raw: Int64, _ range: ControlRange) -> Double {
        range.min > 0 ? Double(raw) / Double(range.min) : 1 + Double(raw - range.min) / 100
    }

    /// Sets the zoom factor (1…`maxAvailableVideoZoomFactor`). Requires the lock.
    public func setVideoZoomFactor(_ factor: Double) throws(CaptureError) {
        try requireConfigurationLock()
        let range = try controlRange(.zoomAbsolute, "a zoom control")
        let raw = range.min > 0 ? Int64((factor * Double(range.min)).rounded()) : range.min + Int64(((factor - 1) * 100).rounded())
        guard factor >= 1, raw <= range.max else {
            throw CaptureError(
                .valueOutOfRange, "zoom factor \(factor) is outside 1…\(Self.zoomFactor(range.max, range))")
        }
        try setValue(raw, for: .zoomAbsolute)
    }
}
