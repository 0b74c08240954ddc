import Synchronization

extension CaptureDevice {
    /// Finds devices by type, media type and position (`AVCaptureDevice.DiscoverySession`).
    ///
    /// Cameras come from the registered discovery backends (V4L2); files, folders and synthetic
    /// cameras are not discoverable: create them with their initialisers.
    ///
    /// Threading: thread-safe; `devices` enumerates afresh on each read.
    public struct DiscoverySession: Sendable {
        /// The device types to list.
        public let deviceTypes: [DeviceType]
        /// The media type the devices must deliver.
        public let mediaType: MediaType?
        /// The position the devices must have (`.unspecified` matches any).
        public let position: Position

        public init(deviceTypes: [DeviceType], mediaType: MediaType?, position: Position) {
            self.deviceTypes = deviceTypes
            self.mediaType = mediaType
            self.position = position
        }

        /// The matching devices, in the order the backends list them.
        public var devices: [CaptureDevice] {
            CaptureDevice.discoveryBackends.withLock { $0 }.flatMap { $0() }.filter { device in
                deviceTypes.contains(device.deviceType) && (position == .unspecified || device.position == position)
            }
        }
    }

    /// The first camera for `mediaType`, or nil when there is none (`AVCaptureDevice.default(for:)`).
    public static func `default`(for mediaType: MediaType) -> CaptureDevice? {
        DiscoverySession(deviceTypes: [.external], mediaType: mediaType, position: .unspecified).devices.first
    }

    /// Functions that list cameras; the V4L2 backend is always the first.
    static let discoveryBackends = Mutex<[@Sendable () -> [CaptureDevice]]>([{ V4L2Discovery.devices() }])

    /// Adds a discovery backend (tests use this to present emulated or fake cameras).
    public static func registerDiscoveryBackend(_ backend: @escaping @Sendable () -> [CaptureDevice]) {
        discoveryBackends.withLock { $0.append(backend) }
    }
}
