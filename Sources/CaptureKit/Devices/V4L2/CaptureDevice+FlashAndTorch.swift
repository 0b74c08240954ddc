import Foundation

/// Torch and flash, which share one V4L2 control (`AVCaptureDevice` torch mode, `hasFlash`).
/// Firing the flash for a photo is `CapturePhotoOutput`'s job (`FlashControl`).
///
/// Wraps `V4L2_CID_FLASH_LED_MODE` (`flash_led_mode`: none, flash, torch) through
/// `ioctl(VIDIOC_G_CTRL)` / `ioctl(VIDIOC_S_CTRL)`.
///
/// Threading: reads are thread-safe; setters also require `lockForConfiguration()`.
extension CaptureDevice {
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

    /// The torch mode, read from `flash_led_mode` (the throwing form of the `torchMode` getter).
    /// - Throws: `.unsupported` for a camera without a torch; the control's read error.
    public func currentTorchMode() throws(CaptureError) -> TorchMode {
        guard hasTorch else { throw CaptureError(.unsupported, "\(localizedName) has no torch") }
        return try value(of: .flashLEDMode) == 2 ? .on : .off
    }

    /// The torch mode (`torchMode`).
    ///
    /// Reading answers `.off` for a device without a torch or when the camera cannot be read
    /// (`currentTorchMode()` throws instead). Setting works as `setTorchMode(_:)`, without `try`:
    /// as AVFoundation raises, setting without `lockForConfiguration()` or a mode
    /// `isTorchModeSupported(_:)` denies stops the program; a camera that refuses the change is
    /// reported as a `.warning` event of the sessions using this device.
    public var torchMode: TorchMode {
        get { (try? currentTorchMode()) ?? .off }
        set { applySetting("torchMode") { () throws(CaptureError) in try setTorchMode(newValue) } }
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
}
