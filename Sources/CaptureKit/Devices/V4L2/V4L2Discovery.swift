import CV4L2
import Foundation
import Synchronization

/// Finds V4L2 cameras: every `/dev/video*` node that captures video (metadata-only nodes, which
/// UVC cameras add beside each camera, are skipped by `VIDIOC_QUERYCAP`'s `device_caps`), plus
/// the nodes listed in `CVCAM_V4L2_DEVICES` (colon-separated paths: nodes outside /dev/video*,
/// such as an emulated camera).
///
/// Threading: thread-safe; every call enumerates afresh.
public enum V4L2Discovery {
    /// The environment variable naming extra device nodes.
    public static let extraDevicesVariable = "CVCAM_V4L2_DEVICES"

    /// The candidate nodes: `/dev/video<N>` in numeric order, then the extra ones that exist.
    public static func nodePaths(system: V4L2SystemCalls = .live) -> [String] {
        let numbered = (system.listDirectory("/dev") ?? [])
            .compactMap { name -> (Int, String)? in
                guard name.hasPrefix("video"), let n = Int(name.dropFirst(5)) else { return nil }
                return (n, "/dev/" + name)
            }
            .sorted { $0.0 < $1.0 }
            .map(\.1)
        let extra = (ProcessInfo.processInfo.environment[extraDevicesVariable] ?? "")
            .split(separator: ":").map(String.init)
            .filter { !numbered.contains($0) && system.access($0, F_OK) == 0 }
        return numbered + extra
    }

    /// The cameras present now. Nodes that cannot be opened (permission, busy, vanished) or do
    /// not capture video are left out; `survey(system:)` says why.
    public static func devices(system: V4L2SystemCalls = .live) -> [CaptureDevice] {
        survey(system: system).devices
    }

    /// What one look at the device nodes found.
    ///
    /// Value type; thread-safe.
    public struct Survey: Sendable {
        /// The cameras that could be opened, as `devices(system:)` returns them.
        public var devices: [CaptureDevice]
        /// Nodes that exist but could not be opened, each with its `.permissionDenied`,
        /// `.deviceBusy` or `.deviceFailure` error (a vanished node is not listed).
        public var unavailable: [CaptureError]
    }

    /// The cameras present now, and why any other node could not be opened (so "no camera"
    /// can say "permission denied" or "busy" instead). The corresponding C functions are
    /// `open` and `ioctl(VIDIOC_QUERYCAP)` on each node.
    public static func survey(system: V4L2SystemCalls = .live) -> Survey {
        var found: [(source: V4L2FrameSource, path: String)] = []
        var unavailable: [CaptureError] = []
        for path in nodePaths(system: system) {
            let d: V4L2Descriptor
            do { d = try V4L2Descriptor.open(path, system: system) } catch {
                if !error.isDisconnection { unavailable.append(error.captureError) }
                continue
            }
            defer { d.close() }
            guard let source = try? V4L2FrameSource(descriptor: d) else { continue }
            found.append((source, path))
        }
        return Survey(devices: devices(from: found), unavailable: unavailable)
    }

    private static func devices(from found: [(source: V4L2FrameSource, path: String)]) -> [CaptureDevice] {
        // The bus path names the port, so it survives reboots; cameras with two capture nodes
        // on one port (IR + colour) are told apart by node.
        let busCounts = Dictionary(grouping: found, by: \.source.busInfo).mapValues(\.count)
        return found.compactMap { source, path in
            let bus = source.busInfo.isEmpty ? path : source.busInfo
            let id = "v4l2:" + bus + ((busCounts[source.busInfo] ?? 0) > 1 || source.busInfo.isEmpty ? "#" + path : "")
            return known.withLock { known -> CaptureDevice? in
                // One object per camera while anyone holds it, as AVFoundation does: the
                // configuration lock and active format live in the object.
                if let device = known[id]?.device, device.source.capabilities?.devicePath == path,
                    device.source.formats == source.formats
                {
                    return device
                }
                guard
                    let device = try? CaptureDevice(
                        uniqueID: id, localizedName: source.card, deviceType: .external, position: .unspecified,
                        source: source)
                else { return nil }
                known[id] = WeakDevice(device: device)
                return device
            }
        }
    }

    private struct WeakDevice {
        weak var device: CaptureDevice?
    }
    /// Devices handed out, by uniqueID, while someone holds them.
    private static let known = Mutex<[String: WeakDevice]>([:])
}

extension CaptureDevice {
    /// A camera from its device node (`/dev/video0`), for tools that take a path.
    ///
    /// - Throws: `.permissionDenied` (join the `video` group), `.deviceBusy`,
    ///   `.deviceDisconnected` (no such node), `.unsupported` (not a capture node).
    public convenience init(v4l2Path path: String, system: V4L2SystemCalls = .live) throws(CaptureError) {
        let source = try V4L2FrameSource(path: path, system: system)
        try self.init(
            uniqueID: "v4l2:" + (source.busInfo.isEmpty ? path : source.busInfo), localizedName: source.card,
            deviceType: .external, position: .unspecified, source: source)
    }

    /// Whether the app may use cameras (`AVCaptureDevice.AuthorizationStatus`).
    public enum AuthorizationStatus: String, Sendable, CaseIterable {
        /// No camera node exists, so nothing can be said yet.
        case notDetermined
        /// Reserved for policy beyond file permissions (not reported on Linux today).
        case restricted
        /// Camera nodes exist but this user may open none: join the `video` group.
        case denied
        /// This user can open at least one camera node.
        case authorized
    }

    /// Whether this user can open camera nodes for reading and writing
    /// (`AVCaptureDevice.authorizationStatus(for:)`). The corresponding C function is
    /// `access(2)` with `R_OK | W_OK`. Threading: thread-safe.
    public static func authorizationStatus(for mediaType: MediaType) -> AuthorizationStatus {
        authorizationStatus(for: mediaType, system: .live)
    }

    /// `authorizationStatus(for:)` through a given syscall seam (tests).
    public static func authorizationStatus(for mediaType: MediaType, system: V4L2SystemCalls) -> AuthorizationStatus {
        let paths = V4L2Discovery.nodePaths(system: system)
        if paths.isEmpty { return .notDetermined }
        return paths.contains { system.access($0, R_OK | W_OK) == 0 } ? .authorized : .denied
    }

    /// A camera appearing or going away.
    public enum DeviceChange: Sendable {
        /// A camera was plugged in.
        case connected(CaptureDevice)
        /// The camera with this `uniqueID` went away.
        case disconnected(uniqueID: String)
    }

    /// Camera arrivals and departures, found by looking at the device nodes every
    /// `pollInterval` seconds (no udev dependency). The cameras present when the stream starts
    /// are reported first as `.connected`. The stream ends when its consumer stops iterating.
    /// Threading: thread-safe; a background thread does the polling.
    public static func deviceChanges(pollInterval: Double = 1, system: V4L2SystemCalls = .live) -> AsyncStream<DeviceChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: DeviceChange.self)
        let stopper = StopFlag()
        continuation.onTermination = { _ in stopper.set() }
        let thread = Thread {
            var known: [String: String] = [:]  // node path → uniqueID
            while !stopper.isSet {
                let paths = Set(V4L2Discovery.nodePaths(system: system))
                for (path, id) in known where !paths.contains(path) {
                    known[path] = nil
                    continuation.yield(.disconnected(uniqueID: id))
                }
                let new = paths.filter { known[$0] == nil }
                if !new.isEmpty {
                    for device in V4L2Discovery.devices(system: system) {
                        guard let path = device.source.capabilities?.devicePath, new.contains(path) else { continue }
                        known[path] = device.uniqueID
                        continuation.yield(.connected(device))
                    }
                }
                var slept = 0.0
                while slept < pollInterval && !stopper.isSet {
                    Thread.sleep(forTimeInterval: 0.05)
                    slept += 0.05
                }
            }
            continuation.finish()
        }
        thread.name = "cvcam.v4l2.device-monitor"
        thread.start()
        return stream
    }
}

/// A shared stop flag for the monitor thread.
private final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .relaxed) }
    var isSet: Bool { flag.load(ordering: .relaxed) }
}
