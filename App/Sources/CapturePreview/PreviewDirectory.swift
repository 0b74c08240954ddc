import CaptureJobs
import Foundation
import Synchronization

/// The cameras a preview server shows, by name, while it runs.
///
/// `cvcam preview` lists its one camera once. `cvcam serve` lists every configured camera and
/// attaches a `PreviewCamera` each time that camera's session starts; when the session ends
/// (a failure, a reload, a shutdown) the camera is detached and its viewers' streams and
/// sockets end, so their pages reconnect to the next session. A listed camera without a
/// session still has its page (which waits); its stream, socket and stats answer 503.
///
/// Threading: thread-safe; every member may be used from any thread or task.
package final class PreviewDirectory: Sendable {
    private struct State {
        package var names: [String] = []
        package var current: [String: PreviewCamera] = [:]
    }
    private let state = Mutex(State())

    /// An empty directory; `list` and `attach` fill it.
    package init() {}

    /// A directory of cameras that never change (`cvcam preview`).
    package convenience init(cameras: [PreviewCamera]) {
        precondition(Set(cameras.map(\.name)).count == cameras.count, "camera names must be unique")
        self.init()
        list(cameras.map(\.name))
        for camera in cameras { attach(camera) }
    }

    /// The names shown, in order.
    package var names: [String] { state.withLock { $0.names } }

    /// Whether `name` is listed (its page exists), with a session or not.
    package func isListed(_ name: String?) -> Bool {
        guard let name else { return false }
        return state.withLock { $0.names.contains(name) }
    }

    /// The camera `name` with its current session, if it has one.
    package func camera(named name: String?) -> PreviewCamera? {
        guard let name else { return nil }
        return state.withLock { $0.current[name] }
    }

    /// Sets the names shown (a reload); a camera no longer listed is detached.
    package func list(_ names: [String]) {
        precondition(names.allSatisfy(PreviewCamera.isValidName), "camera names must be path segments")
        let dropped = state.withLock { state -> [PreviewCamera] in
            state.names = names
            let gone = state.current.filter { !names.contains($0.key) }
            for name in gone.keys { state.current[name] = nil }
            return Array(gone.values)
        }
        for camera in dropped { camera.finish() }
    }

    /// A session of `camera.name` started: it replaces the one before, whose viewers are ended.
    /// A camera that is not listed is listed at the end.
    package func attach(_ camera: PreviewCamera) {
        let replaced = state.withLock { state -> PreviewCamera? in
            if !state.names.contains(camera.name) { state.names.append(camera.name) }
            defer { state.current[camera.name] = camera }
            return state.current[camera.name]
        }
        if let replaced, replaced !== camera { replaced.finish() }
    }

    /// The session of `camera` ended: its viewers' streams and sockets end. Does nothing to a
    /// newer session of the same name.
    package func detach(_ camera: PreviewCamera) {
        state.withLock { state in
            if state.current[camera.name] === camera { state.current[camera.name] = nil }
        }
        camera.finish()
    }
}
