import Foundation

/// Exposure: mode, duration, ISO (gain) and target bias (`AVCaptureDevice` exposure API).
///
/// Wraps `V4L2_CID_EXPOSURE_AUTO` (`exposure_auto`), `V4L2_CID_EXPOSURE_ABSOLUTE`
/// (`exposure_time_absolute`), `V4L2_CID_GAIN` and `V4L2_CID_AUTO_EXPOSURE_BIAS`, through
/// `ioctl(VIDIOC_G_CTRL)` / `ioctl(VIDIOC_S_CTRL)`. The manual mode last chosen is kept in
/// `DeviceCapabilities.chosenExposureMode`, since V4L2 has one manual mode for two of ours.
///
/// `exposureMode` is a settable property as in AVFoundation; `currentExposureMode()` and
/// `setExposureMode(_:)` are its throwing forms.
///
/// Threading: reads are thread-safe; setters also require `lockForConfiguration()`.
extension CaptureDevice {
    /// How exposure is chosen (`AVCaptureDevice.ExposureMode`).
    public enum ExposureMode: String, Sendable, CaseIterable {
        /// Fixed at the current duration and gain (`exposure_auto` = manual).
        case locked
        /// One automatic adjustment, then locked (no V4L2 equivalent: never supported).
        case autoExpose
        /// The camera keeps adjusting (`exposure_auto` = auto or aperture priority).
        case continuousAutoExposure
        /// Duration and ISO set by the app (`exposure_auto` = manual).
        case custom
    }

    /// Whether the camera supports `mode`. Threading: thread-safe.
    public func isExposureModeSupported(_ mode: ExposureMode) -> Bool {
        guard let menu = (try? controlDescription(.exposureAuto)) ?? nil else { return false }
        let items = Set(menu.menu.map(\.index))
        switch mode {
        case .locked, .custom: return items.contains(1)
        case .continuousAutoExposure: return items.contains(0) || items.contains(3)
        case .autoExpose: return false
        }
    }

    /// The current exposure mode, read from `exposure_auto` (the throwing form of the
    /// `exposureMode` getter). Manual exposure reads as the manual mode last chosen through this
    /// API (`.locked` or `.custom`; `.custom` if none was).
    /// - Throws: `.unsupported` for a camera without the control; the control's read error.
    public func currentExposureMode() throws(CaptureError) -> ExposureMode {
        let raw = try value(of: .exposureAuto)
        if raw != 1 { return .continuousAutoExposure }
        let chosen = source.capabilities?.chosenExposureMode
        return chosen == .locked ? .locked : .custom
    }

    /// The exposure mode (`exposureMode`).
    ///
    /// Reading answers `.continuousAutoExposure` for a device without exposure controls (a file,
    /// a synthetic camera) or when the camera cannot be read; `currentExposureMode()` throws
    /// instead. Setting works as `setExposureMode(_:)`, without `try`: as AVFoundation raises,
    /// setting without `lockForConfiguration()` or a mode `isExposureModeSupported(_:)` denies
    /// stops the program; a camera that refuses the change is reported as a `.warning` event of
    /// the sessions using this device (and logged on `cvcam.device`).
    public var exposureMode: ExposureMode {
        get { (try? currentExposureMode()) ?? .continuousAutoExposure }
        set { applySetting("exposureMode") { () throws(CaptureError) in try setExposureMode(newValue) } }
    }

    /// Sets the exposure mode. Requires the lock. `.continuousAutoExposure` first applies an
    /// `exposurePointOfInterest` set since (the UVC region of interest, with auto exposure
    /// following it).
    public func setExposureMode(_ mode: ExposureMode) throws(CaptureError) {
        try requireConfigurationLock()
        guard isExposureModeSupported(mode), let menu = try controlDescription(.exposureAuto) else {
            throw CaptureError(.unsupported, "\(localizedName) does not support exposure mode \(mode.rawValue)")
        }
        if mode == .continuousAutoExposure { try applyExposurePointOfInterest() }
        let items = Set(menu.menu.map(\.index))
        try setValue(mode == .continuousAutoExposure ? (items.contains(0) ? 0 : 3) : 1, for: .exposureAuto)
        let capabilities = try v4l2Source(for: "exposure modes")
        capabilities.chosenExposureMode = mode
    }

    /// The exposure duration (`exposure_time_absolute`, converted from its 100 µs units).
    public var exposureDuration: MediaTime {
        get throws(CaptureError) { MediaTime(value: try value(of: .exposureAbsolute) * 100, timescale: 1_000_000) }
    }

    /// The shortest exposure the camera allows.
    public var minExposureDuration: MediaTime {
        get throws(CaptureError) {
            MediaTime(value: try controlRange(.exposureAbsolute, "an exposure time control").min * 100, timescale: 1_000_000)
        }
    }

    /// The longest exposure the camera allows.
    public var maxExposureDuration: MediaTime {
        get throws(CaptureError) {
            MediaTime(value: try controlRange(.exposureAbsolute, "an exposure time control").max * 100, timescale: 1_000_000)
        }
    }

    /// Sets the exposure duration, rounded to the control's 100 µs unit. Requires the lock and
    /// a manual exposure mode.
    /// - Throws: `.settingInactive` in automatic exposure; `.valueOutOfRange` outside
    ///   `minExposureDuration…maxExposureDuration`.
    public func setExposureDuration(_ duration: MediaTime) throws(CaptureError) {
        try requireConfigurationLock()
        let units = Int64((duration.seconds * 10_000).rounded())
        let range = try controlRange(.exposureAbsolute, "an exposure time control")
        guard units >= range.min && units <= range.max else {
            throw CaptureError(
                .valueOutOfRange,
                "exposure duration \(duration.seconds) s is outside \(Double(range.min) / 10_000)…\(Double(range.max) / 10_000) s")
        }
        try setValue(units, for: .exposureAbsolute)
    }

    /// ISO on the camera's gain control. V4L2 gain has no unit, so CaptureKit maps the gain
    /// range linearly onto ISO 100…1600 (`minISO`…`maxISO`).
    public var iso: Float {
        get throws(CaptureError) {
            let range = try controlRange(.gain, "a gain control")
            return Self.iso(gain: try value(of: .gain), range: range)
        }
    }

    /// The ISO of the lowest gain.
    public var minISO: Float { 100 }
    /// The ISO of the highest gain.
    public var maxISO: Float { 1600 }

    static func iso(gain: Int64, range: ControlRange) -> Float {
        range.count == 0 ? 100 : 100 + Float(gain - range.min) * 1500 / Float(range.count)
    }

    /// Sets the gain for an ISO in `minISO…maxISO`. Requires the lock and a manual exposure mode.
    /// - Throws: `.settingInactive` in automatic exposure; `.valueOutOfRange` outside the ISO range.
    public func setISO(_ iso: Float) throws(CaptureError) {
        try requireConfigurationLock()
        guard iso >= minISO && iso <= maxISO else {
            throw CaptureError(.valueOutOfRange, "ISO \(iso) is outside \(minISO)…\(maxISO)")
        }
        let range = try controlRange(.gain, "a gain control")
        try setValue(range.min + Int64(((iso - 100) * Float(range.count) / 1500).rounded()), for: .gain)
    }

    /// Switches to custom exposure and sets duration and ISO (nil keeps the current one), like
    /// `setExposureModeCustom(duration:iso:)`. Requires the lock.
    public func setExposureModeCustom(duration: MediaTime?, iso: Float?) throws(CaptureError) {
        try setExposureMode(.custom)
        if let duration { try setExposureDuration(duration) }
        if let iso { try setISO(iso) }
    }

    /// The exposure target bias in EV (`auto_exposure_bias`, 0.001 EV units).
    public var exposureTargetBias: Float {
        get throws(CaptureError) {
            let d = try requireDescription(.autoExposureBias, "an exposure bias control")
            let raw = try value(of: .autoExposureBias)
            if d.isMenu { return Float(d.menu.first { $0.index == raw }?.value ?? 0) / 1000 }
            return Float(raw) / 1000
        }
    }

    /// The smallest bias in EV.
    public var minExposureTargetBias: Float {
        get throws(CaptureError) { try biasValues().min().map { Float($0) / 1000 } ?? 0 }
    }

    /// The largest bias in EV.
    public var maxExposureTargetBias: Float {
        get throws(CaptureError) { try biasValues().max().map { Float($0) / 1000 } ?? 0 }
    }

    private func biasValues() throws(CaptureError) -> [Int64] {
        let d = try requireDescription(.autoExposureBias, "an exposure bias control")
        return d.isMenu ? d.menu.compactMap(\.value) : [d.minimum, d.maximum]
    }

    /// Sets the exposure bias in EV (the nearest value the camera offers). Requires the lock and
    /// an automatic exposure mode.
    /// - Throws: `.settingInactive` in manual exposure; `.valueOutOfRange` outside min…max bias.
    public func setExposureTargetBias(_ bias: Float) throws(CaptureError) {
        try requireConfigurationLock()
        let d = try requireDescription(.autoExposureBias, "an exposure bias control")
        let milli = Int64((bias * 1000).rounded())
        let values = d.isMenu ? d.menu.compactMap(\.value) : [d.minimum, d.maximum]
        guard let lo = values.min(), let hi = values.max(), milli >= lo, milli <= hi else {
            throw CaptureError(.valueOutOfRange, "exposure bias \(bias) EV is outside the camera's range")
        }
        if d.isMenu {
            let nearest = d.menu.min { abs(($0.value ?? 0) - milli) < abs(($1.value ?? 0) - milli) }!
            try setValue(nearest.index, for: .autoExposureBias)
        } else {
            try setValue(milli, for: .autoExposureBias)
        }
    }
}
