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
}
