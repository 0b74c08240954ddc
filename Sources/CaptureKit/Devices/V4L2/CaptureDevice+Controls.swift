import CV4L2
import Foundation

/// Generic controls: every V4L2 control by ID, its description, and checked reads and writes.
/// The feature files (`CaptureDevice+Exposure.swift`, `+Focus`, `+WhiteBalance`, `+Zoom`,
/// `+FlashAndTorch`) build on these. The device reaches the camera through
/// `source.capabilities`, so any `DeviceCapabilities` backend works here.
///
/// Wraps `ioctl(VIDIOC_QUERY_EXT_CTRL)`, `ioctl(VIDIOC_QUERYMENU)`, `ioctl(VIDIOC_G_CTRL)` and
/// `ioctl(VIDIOC_S_CTRL)` (through `V4L2Controls`).
///
/// Threading: reads are thread-safe; writes also require `lockForConfiguration()`.
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
        /// `V4L2_CID_UVC_REGION_OF_INTEREST_RECT` (uvcvideo, UVC 1.5 cameras): the region of
        /// interest, a compound `rect` control in the sensor's pixels.
        public static let regionOfInterestRect = Control(rawValue: CV4L2_CID_UVC_REGION_OF_INTEREST_RECT)
        /// `V4L2_CID_UVC_REGION_OF_INTEREST_AUTO` (uvcvideo): a bitmask of the automatic controls
        /// that follow the region of interest (auto exposure, auto focus, …).
        public static let regionOfInterestAuto = Control(rawValue: CV4L2_CID_UVC_REGION_OF_INTEREST_AUTO)

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
        /// The driver's name for the control ("Exposure Time, Absolute").
        public var name: String
        /// The name v4l2-ctl uses for it (`exposure_time_absolute`): see `v4l2Name(_:)`.
        public var v4l2Name: String
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
        /// Whether values are menu indices (`menu`, `intmenu`).
        public var isMenu: Bool { type == "menu" || type == "intmenu" }

        /// v4l2-ctl's name for a control: the driver's name in lower case, each run of
        /// characters other than ASCII letters and digits one underscore, none at either end
        /// ("White Balance, Automatic" → `white_balance_automatic`).
        public static func v4l2Name(_ name: String) -> String {
            var out = ""
            var pendingUnderscore = false
            for byte in name.utf8 {
                let isAlphanumeric = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                guard isAlphanumeric else {
                    pendingUnderscore = !out.isEmpty
                    continue
                }
                if pendingUnderscore { out.append("_") }
                pendingUnderscore = false
                out.append(Character(Unicode.Scalar(byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte)))
            }
            return out
        }
    }

    /// The control v4l2-ctl calls `name` (`brightness`, `exposure_time_absolute`; see
    /// `ControlDescription.v4l2Name(_:)`), also under its name before kernel 5.16
    /// (`exposure_absolute`), nil when the device has none. Threading: thread-safe.
    public func control(named name: String) throws(CaptureError) -> ControlDescription? {
        let all = try controlDescriptions()
        if let found = all.first(where: { $0.v4l2Name == name }) { return found }
        guard let id = Self.controlsRenamedIn5_16[name] else { return nil }
        return all.first { $0.control == id }
    }

    /// Names kernel 5.16 changed (the IDs stayed): old v4l2-ctl name → control.
    static let controlsRenamedIn5_16: [String: Control] = [
        "exposure_auto": .exposureAuto, "exposure_absolute": .exposureAbsolute,
        "white_balance_temperature_auto": .autoWhiteBalance, "focus_auto": .focusAuto,
    ]


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
            guard let c = try V4L2Controls.require(d, control, localizedName) else { return 0 }
            if c.flags.contains("has-payload") {
                throw CaptureError(
                    .unsupported, "\(localizedName): \(c.name) (\(control)) is a compound control (\(c.type)) and has no single value")
            }
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
