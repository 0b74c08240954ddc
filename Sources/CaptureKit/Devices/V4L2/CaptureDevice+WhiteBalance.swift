import Foundation

/// White balance: mode and colour temperature (`AVCaptureDevice` white balance API).
///
/// Wraps `V4L2_CID_AUTO_WHITE_BALANCE` (`white_balance_automatic`),
/// `V4L2_CID_WHITE_BALANCE_TEMPERATURE` and the button `V4L2_CID_DO_WHITE_BALANCE`, through
/// `ioctl(VIDIOC_G_CTRL)` / `ioctl(VIDIOC_S_CTRL)`.
///
/// Threading: reads are thread-safe; setters also require `lockForConfiguration()`.
extension CaptureDevice {
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

    /// The current white balance mode, read from `white_balance_automatic` (the throwing form of
    /// the `whiteBalanceMode` getter).
    /// - Throws: `.unsupported` for a camera without white balance controls; the read error.
    public func currentWhiteBalanceMode() throws(CaptureError) -> WhiteBalanceMode {
        guard isControlSupported(.autoWhiteBalance) else {
            if isControlSupported(.whiteBalanceTemperature) { return .locked }
            throw CaptureError(.unsupported, "\(localizedName) has no white balance control")
        }
        return try value(of: .autoWhiteBalance) != 0 ? .continuousAutoWhiteBalance : .locked
    }

    /// The white balance mode (`whiteBalanceMode`).
    ///
    /// Reading answers `.continuousAutoWhiteBalance` for a device without white balance controls
    /// or when the camera cannot be read (`currentWhiteBalanceMode()` throws instead). Setting
    /// works as `setWhiteBalanceMode(_:)`, without `try`: as AVFoundation raises, setting without
    /// `lockForConfiguration()` or a mode `isWhiteBalanceModeSupported(_:)` denies stops the
    /// program; a camera that refuses the change is reported as a `.warning` event of the
    /// sessions using this device.
    public var whiteBalanceMode: WhiteBalanceMode {
        get { (try? currentWhiteBalanceMode()) ?? .continuousAutoWhiteBalance }
        set { applySetting("whiteBalanceMode") { () throws(CaptureError) in try setWhiteBalanceMode(newValue) } }
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
}
