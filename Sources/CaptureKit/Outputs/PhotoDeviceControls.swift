import Foundation

/// How a photo output biases exposure for brackets: through a source that does it itself
/// (`ExposureBracketingSource`), or through a V4L2 camera's `auto_exposure_bias` control
/// (`CaptureDevice.setExposureTargetBias`, taking the configuration lock for the call).
struct ExposureBiasControl: Sendable {
    /// Biases accepted, in EV.
    let range: ClosedRange<Float>
    /// Sets a bias; returns how many frames still come at the old exposure.
    let setBias: @Sendable (Float) throws(CaptureError) -> Int

    /// The device's way of biasing exposure, or nil when it has none.
    init?(device: CaptureDevice) {
        if let source = device.source as? any ExposureBracketingSource {
            range = source.exposureTargetBiasRange
            setBias = { bias throws(CaptureError) in try source.setExposureTargetBias(bias) }
            return
        }
        guard device.deviceType == .external, device.isControlSupported(.autoExposureBias),
            let low = try? device.minExposureTargetBias, let high = try? device.maxExposureTargetBias, low < high
        else { return nil }
        range = low...high
        setBias = { bias throws(CaptureError) in
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            try device.setExposureTargetBias(bias)
            // Frames already captured were exposed before the change.
            return device.source.capabilities?.framesInFlight ?? 1
        }
    }
}

/// How a photo output fires a V4L2 camera's flash: LED mode flash (`flash_led_mode` = 1), then
/// `flash_strobe` when the camera has it; afterwards the previous LED mode goes back. Each call
/// takes the configuration lock for its control writes.
///
/// Threading: thread-safe (the device serialises its control calls).
struct FlashControl: Sendable {
    let device: CaptureDevice
    let hasStrobe: Bool

    /// The device's flash, or nil when it has none (files, synthetic sources, cameras without
    /// a "Flash" LED mode).
    init?(device: CaptureDevice) {
        guard device.deviceType == .external, device.hasFlash else { return nil }
        self.device = device
        hasStrobe = device.isControlSupported(.flashStrobe)
    }

    /// Switches the LED to flash mode and strobes; returns the mode to put back. On failure the
    /// previous mode is already back. The corresponding C calls are `ioctl(VIDIOC_G_CTRL)` and
    /// `ioctl(VIDIOC_S_CTRL)` on `V4L2_CID_FLASH_LED_MODE` and `V4L2_CID_FLASH_STROBE`.
    func fire() throws(CaptureError) -> Int64 {
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        let previous = try device.value(of: .flashLEDMode)
        do throws(CaptureError) {
            try device.setValue(1, for: .flashLEDMode)  // V4L2_FLASH_LED_MODE_FLASH
            if hasStrobe { try device.setValue(1, for: .flashStrobe) }
        } catch {
            _ = try? device.setValue(previous, for: .flashLEDMode)
            throw error
        }
        return previous
    }

    /// Puts the LED mode `mode` back (`ioctl(VIDIOC_S_CTRL)`).
    func restore(_ mode: Int64) throws(CaptureError) {
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setValue(mode, for: .flashLEDMode)
    }
}
