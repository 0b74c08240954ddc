import Foundation

/// Focus (`AVCaptureDevice` focus mode and lens position).
///
/// Wraps `V4L2_CID_FOCUS_AUTO` (`focus_automatic_continuous`), `V4L2_CID_FOCUS_ABSOLUTE`
/// (`focus_absolute`) and the button `V4L2_CID_AUTO_FOCUS_START`, through
/// `ioctl(VIDIOC_G_CTRL)` / `ioctl(VIDIOC_S_CTRL)`.
///
/// `focusMode` is a settable property as in AVFoundation; `currentFocusMode()` and
/// `setFocusMode(_:)` are its throwing forms.
///
/// Threading: reads are thread-safe; setters also require `lockForConfiguration()`.
extension CaptureDevice {
    /// How the lens focuses (`AVCaptureDevice.FocusMode`).
    public enum FocusMode: String, Sendable, CaseIterable {
        /// The lens stays where it is (`focus_automatic_continuous` = 0).
        case locked
        /// One focus search, then locked (`auto_focus_start`).
        case autoFocus
        /// The camera keeps focusing (`focus_automatic_continuous` = 1).
        case continuousAutoFocus
    }

    /// Whether the camera can focus in `mode`. Threading: thread-safe.
    public func isFocusModeSupported(_ mode: FocusMode) -> Bool {
        switch mode {
        case .locked: isControlSupported(.focusAuto) || isControlSupported(.focusAbsolute)
        case .autoFocus: isControlSupported(.autoFocusStart)
        case .continuousAutoFocus: isControlSupported(.focusAuto)
        }
    }

    /// The current focus mode, read from `focus_automatic_continuous` (the throwing form of
    /// the `focusMode` getter).
    /// - Throws: `.unsupported` for a camera without focus controls; the control's read error.
    public func currentFocusMode() throws(CaptureError) -> FocusMode {
        guard isControlSupported(.focusAuto) else {
            if isControlSupported(.focusAbsolute) { return .locked }
            throw CaptureError(.unsupported, "\(localizedName) has no focus control")
        }
        return try value(of: .focusAuto) != 0 ? .continuousAutoFocus : .locked
    }

    /// The focus mode (`focusMode`).
    ///
    /// Reading answers `.locked` for a device without focus controls (a fixed-focus camera, a
    /// file) or when the camera cannot be read; `currentFocusMode()` throws instead. Setting works
    /// as `setFocusMode(_:)`, without `try`: as AVFoundation raises, setting without
    /// `lockForConfiguration()` or a mode `isFocusModeSupported(_:)` denies stops the program;
    /// a camera that refuses the change is reported as a `.warning` event of the sessions using
    /// this device (and logged on `cvcam.device`).
    public var focusMode: FocusMode {
        get { (try? currentFocusMode()) ?? .locked }
        set { applySetting("focusMode") { () throws(CaptureError) in try setFocusMode(newValue) } }
    }

    /// Sets the focus mode. Requires the configuration lock. The automatic modes first apply a
    /// `focusPointOfInterest` set since (the UVC region of interest, with auto focus following it).
    /// - Throws: `.unsupported` when `isFocusModeSupported(mode)` is false.
    public func setFocusMode(_ mode: FocusMode) throws(CaptureError) {
        try requireConfigurationLock()
        guard isFocusModeSupported(mode) else {
            throw CaptureError(.unsupported, "\(localizedName) does not support focus mode \(mode.rawValue)")
        }
        if mode != .locked { try applyFocusPointOfInterest() }
        switch mode {
        case .locked:
            if isControlSupported(.focusAuto) { try setValue(0, for: .focusAuto) }
        case .continuousAutoFocus:
            try setValue(1, for: .focusAuto)
        case .autoFocus:
            if isControlSupported(.focusAuto) { try setValue(0, for: .focusAuto) }
            try setValue(1, for: .autoFocusStart)
        }
    }

    /// The lens position, 0 (closest focus) … 1 (furthest), from `focus_absolute`
    /// (whose larger values focus closer).
    public var lensPosition: Float {
        get throws(CaptureError) {
            let range = try controlRange(.focusAbsolute, "a focus position control")
            let v = try value(of: .focusAbsolute)
            return range.count == 0 ? 0 : Float(range.max - v) / Float(range.count)
        }
    }

    /// Moves the lens (`focus_absolute`). Requires the lock and focus mode `.locked`.
    /// - Throws: `.settingInactive` in an automatic focus mode; `.valueOutOfRange` outside 0…1.
    public func setLensPosition(_ position: Float) throws(CaptureError) {
        try requireConfigurationLock()
        guard (0...1).contains(position) else {
            throw CaptureError(.valueOutOfRange, "lens position \(position) is outside 0…1")
        }
        let range = try controlRange(.focusAbsolute, "a focus position control")
        try setValue(range.max - Int64((Float(range.count) * position).rounded()), for: .focusAbsolute)
    }

    /// Locks focus at `lensPosition` (`setFocusModeLocked(lensPosition:)`): switches continuous
    /// focus off, then moves the lens. Requires the lock.
    public func setFocusModeLocked(lensPosition: Float) throws(CaptureError) {
        try setFocusMode(.locked)
        try setLensPosition(lensPosition)
    }
}
