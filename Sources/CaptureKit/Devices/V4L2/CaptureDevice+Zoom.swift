import Foundation

/// Zoom (`AVCaptureDevice.videoZoomFactor`).
///
/// Wraps `V4L2_CID_ZOOM_ABSOLUTE` (`zoom_absolute`) through `ioctl(VIDIOC_G_CTRL)` /
/// `ioctl(VIDIOC_S_CTRL)`.
///
/// `videoZoomFactor` is a settable property as in AVFoundation; `currentVideoZoomFactor()` and
/// `setVideoZoomFactor(_:)` are its throwing forms.
///
/// Threading: reads are thread-safe; setters also require `lockForConfiguration()`.
extension CaptureDevice {
    /// The zoom factor, read from `zoom_absolute` over its minimum (1 = widest; for a control
    /// whose minimum is 0, 100 units count as 1×, as on most UVC cameras). The throwing form of
    /// the `videoZoomFactor` getter.
    /// - Throws: `.unsupported` for a camera without a zoom control; the control's read error.
    public func currentVideoZoomFactor() throws(CaptureError) -> Double {
        let range = try controlRange(.zoomAbsolute, "a zoom control")
        return Self.zoomFactor(try value(of: .zoomAbsolute), range)
    }

    /// The zoom factor (`videoZoomFactor`), 1 for a device without zoom.
    ///
    /// Reading answers 1 when the camera has no zoom control or cannot be read
    /// (`currentVideoZoomFactor()` throws instead). Setting works as `setVideoZoomFactor(_:)`,
    /// without `try`: as AVFoundation raises, setting without `lockForConfiguration()` or outside
    /// `minAvailableVideoZoomFactor…maxAvailableVideoZoomFactor` stops the program; a camera that
    /// refuses the change is reported as a `.warning` event of the sessions using this device.
    public var videoZoomFactor: Double {
        get { (try? currentVideoZoomFactor()) ?? 1 }
        set { applySetting("videoZoomFactor") { () throws(CaptureError) in try setVideoZoomFactor(newValue) } }
    }

    /// The smallest zoom factor: 1.
    public var minAvailableVideoZoomFactor: Double { 1 }

    /// The largest zoom factor (1 for a device without a zoom control).
    public var maxAvailableVideoZoomFactor: Double {
        guard let range = try? controlRange(.zoomAbsolute, "a zoom control") else { return 1 }
        return Self.zoomFactor(range.max, range)
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
