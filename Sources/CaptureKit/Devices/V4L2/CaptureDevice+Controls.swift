import CV4L2
import Foundation

extension CaptureDevice {
    /// A V4L2 control, addressed by its numeric ID (control names changed in kernel 5.16, e.g.
    /// `exposure_absolute` became `exposure_time_absolute`; the IDs did not).
    ///
    /// Value type; thread-safe.
    public struct Control: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        static let userBase: UInt32 = 0x0098_0900  // V4L2_CID_BASE
        static let cameraBase: UInt32 = 0x009a_0900  // V4L2_CID_CAMERA_CLASS_BASE
        static let flashBase: UInt32 = 0x009c_0900  // V4L2_CID_FLASH_CLASS_BASE

        /// `V4L2_CID_BRIGHTNESS`.
        public static let brightness = Control(rawValue: userBase + 0)
        /// `V4L2_CID_CONTRAST`.
        public static let contrast = Control(rawValue: userBase + 1)
        /// `V4L2_CID_SATURATION`.
        public static let saturation = Control(rawValue: userBase + 2)
        /// `V4L2_CID_HUE`.
        public static let hue = Control(rawValue: userBase + 3)
        /// `V4L2_CID_AUTO_WHITE_BALANCE` (`white_balance_automatic`).
        public static let autoWhiteBalance = Control(rawValue: userBase + 12)
        /// `V4L2_CID_DO_WHITE_BALANCE`, a button for one white balance adjustment.
        public static let doWhiteBalance = Control(rawValue: userBase + 13)
        /// `V4L2_CID_GAIN` (no unit; CaptureKit maps it onto ISO).
        public static let gain = Control(rawValue: userBase + 19)
        /// `V4L2_CID_POWER_LINE_FREQUENCY` (a menu: disabled, 50 Hz, 60 Hz, auto).
        public static let powerLineFrequency = Control(rawValue: userBase + 24)
        /// `V4L2_CID_WHITE_BALANCE_TEMPERATURE`, in kelvin.
        public static let whiteBalanceTemperature = Control(rawValue: userBase + 26)
        /// `V4L2_CID_SHARPNESS`.
        public static let sharpness = Control(rawValue: userBase + 27)
        /// `V4L2_CID_EXPOSURE_AUTO` (a menu: auto, manual, shutter priority, aperture priority).
        public static let exposureAuto = Control(rawValue: cameraBase + 1)
        /// `V4L2_CID_EXPOSURE_ABSOLUTE` (`exposure_time_absolute`), in units of 100 µs.
        public static let exposureAbsolute = Control(rawValue: cameraBase + 2)
        /// `V4L2_CID_FOCUS_ABSOLUTE`; larger values focus closer.
        public static let focusAbsolute = Control(rawValue: cameraBase + 10)
        /// `V4L2_CID_FOCUS_AUTO` (`focus_automatic_continuous`).
        public static let focusAuto = Control(rawValue: cameraBase + 12)
        /// `V4L2_CID_ZOOM_ABSOLUTE`.
        public static let zoomAbsolute = Control(rawValue: cameraBase + 13)
        /// `V4L2_CID_AUTO_EXPOSURE_BIAS`, in units of 0.001 EV.
        public static let autoExposureBias = Control(rawValue: cameraBase + 19)
        /// `V4L2_CID_AUTO_FOCUS_START`, a button that runs one focus search.
        public static let autoFocusStart = Control(rawValue: cameraBase + 28)
        /// `V4L2_CID_FLASH_LED_MODE` (none, flash, torch).
        public static let flashLEDMode = Control(rawValue: flashBase + 1)
        /// `V4L2_CID_FLASH_STROBE`, a button that fires the flash (in LED mode flash).
        public static let flashStrobe = Control(rawValue: flashBase + 3)

        public var description: String { String(format: "0x%08x", rawValue) }
    }

    /// What a device says about one control (`VIDIOC_QUERY_EXT_CTRL`, `VIDIOC_QUERYMENU`).
    ///
    /// Value type; thread-safe.
    public struct ControlDescription: Sendable, Hashable, Codable {
        /// One entry of a menu control: a name, or for integer menus a value.
        public struct MenuItem: Sendable, Hashable, Codable {
            /// The value that selects this entry.
            public var index: Int64
            /// The entry's name (menus).
            public var name: String?
            /// The entry's number (integer menus).
            public var value: Int64?
        }
        /// The control's ID.
        public var control: Control
        /// The driver's name for the control.
        public var name: String
        /// `int`, `bool`, `menu`, `intmenu`, `button`, `int64`, `ctrl_class`, … (v4l2-ctl's words).
        public var type: String
        /// Smallest value (for menus: the first index).
        public var minimum: Int64
        /// Largest value (for menus: the last index).
        public var maximum: Int64
        /// Values go in steps of this size from `minimum`.
        public var step: UInt64
        /// The driver's default.
        public var defaultValue: Int64
        /// The current value; nil for buttons, classes and unreadable controls.
        public var value: Int64?
        /// v4l2-ctl's flag words: `inactive`, `read-only`, `disabled`, `volatile`, `update`, ….
        public var flags: [String]
        /// Menu entries (menus and integer menus only; indices the driver skips are absent).
        public var menu: [MenuItem]

        /// Whether the current mode makes the control inactive (e.g. exposure time in auto exposure).
        public var isInactive: Bool { flags.contains("inactive") }
        var isMenu: Bool { type == "menu" || type == "intmenu" }
    }

    // MARK: Generic controls

    /// The device's capabilities, or `.unsupported` for files and synthetic cameras.
    func v4l2Source(for setting: String) throws(CaptureError) -> any DeviceCapabilities {
        guard let source = source.capabilities else {
            throw CaptureError(.unsupported, "\(localizedName) is not a V4L2 camera, so it has no \(setting)")
        }
        return source
    }

    /// Every control the device has, with ranges, defaults, current values, menus and flags.
    /// The corresponding C functions are `ioctl(VIDIOC_QUERY_EXT_CTRL)` with
    /// `V4L2_CTRL_FLAG_NEXT_CTRL`, `ioctl(VIDIOC_QUERYMENU)` and `ioctl(VIDIOC_G_CTRL)`.
    /// Threading: thread-safe.
    public func controlDescriptions() throws(CaptureError) -> [ControlDescription] {
        try v4l2Source(for: "controls").withControlDescriptor { d throws(CaptureError) in
            do throws(V4L2Error) { return try V4L2Controls.all(d) } catch { throw error.captureError }
        }
    }

    /// One control's description, nil when the device lacks it. Threading: thread-safe.
    public func controlDescription(_ control: Control) throws(CaptureError) -> ControlDescription? {
        try v4l2Source(for: "controls").withControlDescriptor { d throws(CaptureError) in
            do throws(V4L2Error) { return try V4L2Controls.describe(d, control) } catch { throw error.captureError }
        }
    }

    /// Whether the device has `control`. Threading: thread-safe.
    public func isControlSupported(_ control: Control) -> Bool {
        ((try? controlDescription(control)) ?? nil) != nil
    }

    /// A control's current value. The corresponding C function is `ioctl(VIDIOC_G_CTRL)`.
    ///
    /// - Throws: `.unsupported` when the device lacks the control.
    public func value(of control: Control) throws(CaptureError) -> Int64 {
        try v4l2Source(for: "controls").withControlDescriptor { d throws(CaptureError) in
            guard try V4L2Controls.require(d, control, localizedName) != nil else { return 0 }
            do throws(V4L2Error) { return Int64(try d.getControl(id: control.rawValue)) } catch { throw error.captureError }
        }
    }

    /// Sets a control to a raw value after checking it (`brightness`, `contrast`, `saturation`,
    /// `sharpness` and every other control). Requires `lockForConfiguration()`. The
    /// corresponding C function is `ioctl(VIDIOC_S_CTRL)`. Returns the value the driver kept
    /// (drivers round to the control's step).
    ///
    /// - Throws: `.deviceNotLockedForConfiguration`; `.unsupported` (no such control, or
    ///   read-only); `.settingInactive` (the current auto mode owns it); `.valueOutOfRange`
    ///   (outside minimum…maximum, or not a menu entry).
    @discardableResult
    public func setValue(_ value: Int64, for control: Control) throws(CaptureError) -> Int64 {
        try requireConfigurationLock()
        return try v4l2Source(for: "controls").withControlDescriptor { d throws(CaptureError) in
            try V4L2Controls.set(d, control, value, deviceName: localizedName)
        }
    }

    func requireConfigurationLock() throws(CaptureError) {
        guard isLockedForConfiguration else {
            throw CaptureError(
                .deviceNotLockedForConfiguration,
                "\(localizedName): call lockForConfiguration() before changing device settings")
        }
    }

    /// Runs several control operations on one descriptor.
    func withControls<T>(_ setting: String, _ body: (V4L2Descriptor) throws(CaptureError) -> T) throws(CaptureError) -> T {
        try v4l2Source(for: setting).withControlDescriptor(body)
    }

    /// The last format negotiation of a V4L2 camera (requested and granted), nil before the
    /// first start or for other devices. Threading: thread-safe.
    public var lastNegotiation: V4L2Negotiation? { source.capabilities?.lastNegotiation }

    // MARK: Focus

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

    /// The current focus mode (read from `focus_automatic_continuous`).
    public var focusMode: FocusMode {
        get throws(CaptureError) {
            guard isControlSupported(.focusAuto) else {
                if isControlSupported(.focusAbsolute) { return .locked }
                throw CaptureError(.unsupported, "\(localizedName) has no focus control")
            }
            return try value(of: .focusAuto) != 0 ? .continuousAutoFocus : .locked
        }
    }

    /// Sets the focus mode. Requires the configuration lock.
    /// - Throws: `.unsupported` when `isFocusModeSupported(mode)` is false.
    public func setFocusMode(_ mode: FocusMode) throws(CaptureError) {
        try requireConfigurationLock()
        guard isFocusModeSupported(mode) else {
            throw CaptureError(.unsupported, "\(localizedName) does not support focus mode \(mode.rawValue)")
        }
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

    // MARK: Exposure

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

    /// The current exposure mode. Manual exposure reads as the manual mode last chosen through
    /// this API (`.locked` or `.custom`; `.custom` if none was).
    public var exposureMode: ExposureMode {
        get throws(CaptureError) {
            let raw = try value(of: .exposureAuto)
            if raw != 1 { return .continuousAutoExposure }
            let chosen = source.capabilities?.chosenExposureMode
            return chosen == .locked ? .locked : .custom
        }
    }

    /// Sets the exposure mode. Requires the lock.
    public func setExposureMode(_ mode: ExposureMode) throws(CaptureError) {
        try requireConfigurationLock()
        guard isExposureModeSupported(mode), let menu = try controlDescription(.exposureAuto) else {
            throw CaptureError(.unsupported, "\(localizedName) does not support exposure mode \(mode.rawValue)")
        }
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

    // MARK: White balance

    /// How white balance is chosen (`AVCaptureDevice.WhiteBalanceMode`).
    public enum WhiteBalanceMode: String, Sendable, CaseIterable {
        /// Fixed (`white_balance_automatic` = 0; the temperature control applies).
        case locked
        /// One automatic adjustment (`do_white_balance`).
        case autoWhiteBalance
        /// The camera keeps adjusting (`white_balance_automatic` = 1).
        case continuousAutoWhiteBalance
    }

    /// Whether the camera supports `mode`. Threading: thread-safe.
    public func isWhiteBalanceModeSupported(_ mode: WhiteBalanceMode) -> Bool {
        switch mode {
        case .locked: isControlSupported(.autoWhiteBalance) || isControlSupported(.whiteBalanceTemperature)
        case .autoWhiteBalance: isControlSupported(.doWhiteBalance)
        case .continuousAutoWhiteBalance: isControlSupported(.autoWhiteBalance)
        }
    }

    /// The current white balance mode.
    public var whiteBalanceMode: WhiteBalanceMode {
        get throws(CaptureError) {
            guard isControlSupported(.autoWhiteBalance) else {
                if isControlSupported(.whiteBalanceTemperature) { return .locked }
                throw CaptureError(.unsupported, "\(localizedName) has no white balance control")
            }
            return try value(of: .autoWhiteBalance) != 0 ? .continuousAutoWhiteBalance : .locked
        }
    }

    /// Sets the white balance mode. Requires the lock.
    public func setWhiteBalanceMode(_ mode: WhiteBalanceMode) throws(CaptureError) {
        try requireConfigurationLock()
        guard isWhiteBalanceModeSupported(mode) else {
            throw CaptureError(.unsupported, "\(localizedName) does not support white balance mode \(mode.rawValue)")
        }
        switch mode {
        case .locked: if isControlSupported(.autoWhiteBalance) { try setValue(0, for: .autoWhiteBalance) }
        case .continuousAutoWhiteBalance: try setValue(1, for: .autoWhiteBalance)
        case .autoWhiteBalance:
            if isControlSupported(.autoWhiteBalance) { try setValue(0, for: .autoWhiteBalance) }
            try setValue(1, for: .doWhiteBalance)
        }
    }

    /// The white balance colour temperature in kelvin (`white_balance_temperature`).
    public var whiteBalanceTemperature: Float {
        get throws(CaptureError) { Float(try value(of: .whiteBalanceTemperature)) }
    }

    /// Sets the colour temperature in kelvin. Requires the lock and white balance `.locked`.
    /// - Throws: `.settingInactive` in automatic white balance; `.valueOutOfRange` outside the range.
    public func setWhiteBalanceTemperature(_ kelvin: Float) throws(CaptureError) {
        try requireConfigurationLock()
        _ = try controlRange(.whiteBalanceTemperature, "a white balance temperature control")
        try setValue(Int64(kelvin.rounded()), for: .whiteBalanceTemperature)
    }

    /// Locks white balance at a temperature: switches automatic white balance off, then sets it.
    public func setWhiteBalanceModeLocked(temperature kelvin: Float) throws(CaptureError) {
        try setWhiteBalanceMode(.locked)
        try setWhiteBalanceTemperature(kelvin)
    }

    // MARK: Zoom

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

    // MARK: Torch

    /// Torch modes (`AVCaptureDevice.TorchMode`).
    public enum TorchMode: String, Sendable, CaseIterable {
        case off, on, auto
    }

    /// Whether the camera has a torch (`flash_led_mode` offering "Torch").
    public var hasTorch: Bool {
        guard let d = (try? controlDescription(.flashLEDMode)) ?? nil else { return false }
        return d.menu.contains { $0.index == 2 }  // V4L2_FLASH_LED_MODE_TORCH
    }

    /// Whether `mode` is available (`auto` never is on V4L2).
    public func isTorchModeSupported(_ mode: TorchMode) -> Bool { mode != .auto && hasTorch }

    /// The torch mode.
    public var torchMode: TorchMode {
        get throws(CaptureError) {
            guard hasTorch else { throw CaptureError(.unsupported, "\(localizedName) has no torch") }
            return try value(of: .flashLEDMode) == 2 ? .on : .off
        }
    }

    /// Turns the torch on or off. Requires the lock.
    public func setTorchMode(_ mode: TorchMode) throws(CaptureError) {
        try requireConfigurationLock()
        guard isTorchModeSupported(mode) else {
            throw CaptureError(.unsupported, "\(localizedName) has no torch mode \(mode.rawValue)")
        }
        try setValue(mode == .on ? 2 : 0, for: .flashLEDMode)
    }

    // MARK: Flash

    /// Whether the camera has a flash (`hasFlash`): `flash_led_mode` offering "Flash".
    /// Photos use it through `CapturePhotoSettings.flashMode`. Threading: thread-safe.
    public var hasFlash: Bool {
        guard let d = (try? controlDescription(.flashLEDMode)) ?? nil else { return false }
        return d.menu.contains { $0.index == 1 }  // V4L2_FLASH_LED_MODE_FLASH
    }

    // MARK: Helpers

    struct ControlRange {
        var min: Int64
        var max: Int64
        var count: Int64 { max - min }
    }

    func requireDescription(_ control: Control, _ what: String) throws(CaptureError) -> ControlDescription {
        guard let d = try controlDescription(control) else {
            throw CaptureError(.unsupported, "\(localizedName) has no \(what)")
        }
        return d
    }

    func controlRange(_ control: Control, _ what: String) throws(CaptureError) -> ControlRange {
        let d = try requireDescription(control, what)
        return ControlRange(min: d.minimum, max: d.maximum)
    }
}

/// Control queries and the checks before a write, on one descriptor.
enum V4L2Controls {
    static let nextControl: UInt32 = 0x8000_0000  // V4L2_CTRL_FLAG_NEXT_CTRL

    static func typeName(_ type: UInt32) -> String {
        switch type {
        case 1: "int"
        case 2: "bool"
        case 3: "menu"
        case 4: "button"
        case 5: "int64"
        case 6: "ctrl_class"
        case 7: "str"
        case 8: "bitmask"
        case 9: "intmenu"
        default: "type\(type)"
        }
    }

    static func flagNames(_ flags: UInt32) -> [String] {
        let names: [(UInt32, String)] = [
            (0x0001, "disabled"), (0x0002, "grabbed"), (0x0004, "read-only"), (0x0008, "update"),
            (0x0010, "inactive"), (0x0020, "slider"), (0x0040, "write-only"), (0x0080, "volatile"),
            (0x0100, "has-payload"), (0x0200, "execute-on-write"), (0x0400, "modify-layout"),
        ]
        return names.filter { flags & $0.0 != 0 }.map(\.1)
    }

    /// Describes a queried control, reading its menu and value.
    static func describe(_ d: V4L2Descriptor, _ q: v4l2_query_ext_ctrl) throws(V4L2Error) -> CaptureDevice.ControlDescription {
        let type = typeName(q.type)
        var menu: [CaptureDevice.ControlDescription.MenuItem] = []
        if type == "menu" || type == "intmenu", q.minimum >= 0, q.maximum < 256 {
            for index in q.minimum...q.maximum {
                guard let item = try? d.queryMenu(id: q.id, index: UInt32(index)) else { continue }
                if type == "intmenu" {
                    menu.append(.init(index: index, name: nil, value: item.value))
                } else {
                    menu.append(.init(index: index, name: String(v4l2Field: item.name), value: nil))
                }
            }
        }
        var value: Int64?
        let readable = !["button", "ctrl_class", "str", "int64"].contains(type) && q.flags & 0x0041 == 0
        if readable { value = (try? d.getControl(id: q.id)).map(Int64.init) }
        return CaptureDevice.ControlDescription(
            control: .init(rawValue: q.id), name: String(v4l2Field: q.name), type: type, minimum: q.minimum,
            maximum: q.maximum, step: q.step, defaultValue: q.default_value, value: value, flags: flagNames(q.flags),
            menu: menu)
    }

    /// One control, nil when the device lacks it.
    static func describe(_ d: V4L2Descriptor, _ control: CaptureDevice.Control) throws(V4L2Error)
        -> CaptureDevice.ControlDescription?
    {
        do {
            let q = try d.queryControl(id: control.rawValue)
            guard q.id == control.rawValue else { return nil }
            return try describe(d, q)
        } catch where error.errno == EINVAL {
            return nil
        }
    }

    /// Every control, walking `V4L2_CTRL_FLAG_NEXT_CTRL`.
    static func all(_ d: V4L2Descriptor) throws(V4L2Error) -> [CaptureDevice.ControlDescription] {
        var out: [CaptureDevice.ControlDescription] = []
        var id: UInt32 = 0
        while out.count < 1024 {
            let q: v4l2_query_ext_ctrl
            do { q = try d.queryControl(id: id | nextControl) } catch where error.errno == EINVAL { break }
            if q.flags & 0x0001 == 0 { out.append(try describe(d, q)) }  // skip disabled
            id = q.id
        }
        return out
    }

    /// The description of a control that must exist.
    static func require(_ d: V4L2Descriptor, _ control: CaptureDevice.Control, _ deviceName: String) throws(CaptureError)
        -> CaptureDevice.ControlDescription?
    {
        let found: CaptureDevice.ControlDescription?
        do { found = try describe(d, control) } catch { throw error.captureError }
        guard let found else {
            throw CaptureError(.unsupported, "\(deviceName) has no control \(control)")
        }
        return found
    }

    /// Checks and writes one control; returns the value the driver kept.
    static func set(_ d: V4L2Descriptor, _ control: CaptureDevice.Control, _ value: Int64, deviceName: String)
        throws(CaptureError) -> Int64
    {
        guard let c = try require(d, control, deviceName) else { return 0 }
        let label = "\(c.name) (\(control))"
        if c.flags.contains("read-only") || c.flags.contains("disabled") {
            throw CaptureError(.unsupported, "\(deviceName): \(label) cannot be set")
        }
        if c.isInactive {
            throw CaptureError(
                .settingInactive,
                "\(deviceName): \(label) is inactive in the current mode; switch the matching automatic mode off first (e.g. setExposureMode(.custom), setFocusMode(.locked), setWhiteBalanceMode(.locked))")
        }
        if c.type == "button" {
            // Pressing a button carries no value.
        } else if c.isMenu {
            guard c.menu.contains(where: { $0.index == value }) else {
                throw CaptureError(
                    .valueOutOfRange,
                    "\(deviceName): \(value) is not an entry of \(label); entries: \(c.menu.map { String($0.index) }.joined(separator: ", "))")
            }
        } else if value < c.minimum || value > c.maximum {
            throw CaptureError(
                .valueOutOfRange, "\(deviceName): \(value) is outside \(label)'s range \(c.minimum)…\(c.maximum)")
        }
        do {
            return Int64(try d.setControl(id: control.rawValue, value: Int32(clamping: value)))
        } catch {
            throw error.captureError
        }
    }
}
