/// A quality level for a session (`AVCaptureSession.Preset`), resolved against the input's
/// formats when the configuration is committed.
///
/// - `high` and `photo`: the largest format. `medium`: the format closest to 640x480.
///   `low`: the smallest. The sized presets need a format of exactly that size.
///   `inputPriority`: the device's `activeFormat` as set by the user.
/// Among formats of the chosen size, the fastest frame rate wins, then the order the device
/// lists them in.
public struct SessionPreset: RawRepresentable, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let high = SessionPreset(rawValue: "high")
    public static let medium = SessionPreset(rawValue: "medium")
    public static let low = SessionPreset(rawValue: "low")
    public static let photo = SessionPreset(rawValue: "photo")
    public static let vga640x480 = SessionPreset(rawValue: "640x480")
    public static let hd1280x720 = SessionPreset(rawValue: "1280x720")
    public static let hd1920x1080 = SessionPreset(rawValue: "1920x1080")
    public static let hd4K3840x2160 = SessionPreset(rawValue: "3840x2160")
    public static let inputPriority = SessionPreset(rawValue: "inputPriority")

    public static let allCases: [SessionPreset] = [
        .high, .medium, .low, .photo, .vga640x480, .hd1280x720, .hd1920x1080, .hd4K3840x2160, .inputPriority,
    ]

    public var description: String { rawValue }

    /// The exact size a sized preset asks for.
    public var requiredDimensions: CaptureDevice.Dimensions? {
        switch self {
        case .vga640x480: .init(width: 640, height: 480)
        case .hd1280x720: .init(width: 1280, height: 720)
        case .hd1920x1080: .init(width: 1920, height: 1080)
        case .hd4K3840x2160: .init(width: 3840, height: 2160)
        default: nil
        }
    }

    /// The format this preset selects on `device`, or nil when the device cannot deliver it.
    public func format(for device: CaptureDevice) -> CaptureDevice.Format? {
        let formats = device.formats
        guard !formats.isEmpty else { return nil }
        if self == .inputPriority { return device.activeFormat }
        let size: CaptureDevice.Dimensions
        if let required = requiredDimensions {
            size = required
        } else {
            let sizes = formats.map(\.dimensions)
            switch self {
            case .high, .photo: size = sizes.max { $0.area < $1.area }!
            case .low: size = sizes.min { $0.area < $1.area }!
            case .medium: size = sizes.min { abs($0.area - 640 * 480) < abs($1.area - 640 * 480) }!
            default: return nil
            }
        }
        let candidates = formats.filter { $0.dimensions == size }
        return candidates.enumerated().min { a, b in
            let ra = a.element.minFrameDuration?.seconds ?? .infinity
            let rb = b.element.minFrameDuration?.seconds ?? .infinity
            return ra != rb ? ra < rb : a.offset < b.offset
        }?.element
    }
}
