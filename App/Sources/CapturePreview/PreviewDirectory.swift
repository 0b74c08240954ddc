import CaptureJobs
import CaptureKit
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
/// Each camera also has a status for the pages (`status(of:)`): streaming, starting, or not
/// streaming with the reason its host reported (`report(_:problem:)`), and a display name.
///
/// Threading: thread-safe; every member may be used from any thread or task.
package final class PreviewDirectory: Sendable {
    private struct State {
        package var names: [String] = []
        package var current: [String: PreviewCamera] = [:]
        package var displayNames: [String: String] = [:]
        /// Why each camera is not streaming now, as its host said (already made safe to show).
        package var problems: [String: (text: String, since: Date)] = [:]
    }
    private let state = Mutex(State())

    /// What a page shows about one camera.
    package struct Status: Encodable, Sendable, Equatable {
        /// `live`: frames flow; `starting`: no session yet and no problem reported;
        /// `offline`: no session, for `reason`; `interrupted`: a session whose frames stopped.
        package enum State: String, Encodable, Sendable { case live, starting, offline, interrupted }
        package var name: String
        package var displayName: String
        package var state: State
        /// Why the camera is not streaming (the host's last error, URLs without credentials).
        package var reason: String?
        /// When `reason` was reported (RFC 3339, local time).
        package var since: String?
        /// The page of the camera.
        package var page: String

        /// Creates the value from each of its properties.
        package init(name: String, displayName: String, state: State, reason: String? = nil, since: String? = nil, page: String) {
            self.name = name
            self.displayName = displayName
            self.state = state
            self.reason = reason
            self.since = since
            self.page = page
        }
    }

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

    /// Sets the names shown (a reload) and, where given, the names people read
    /// (`displayNames`); a camera no longer listed is detached and forgotten.
    package func list(_ names: [String], displayNames: [String: String] = [:]) {
        precondition(names.allSatisfy(PreviewCamera.isValidName), "camera names must be path segments")
        let dropped = state.withLock { state -> [PreviewCamera] in
            state.names = names
            state.displayNames = displayNames.filter { names.contains($0.key) }
            state.problems = state.problems.filter { names.contains($0.key) }
            let gone = state.current.filter { !names.contains($0.key) }
            for name in gone.keys { state.current[name] = nil }
            return Array(gone.values)
        }
        for camera in dropped { camera.finish() }
    }

    /// Says why camera `name` is not streaming (nil: it is, or is starting afresh). URLs in
    /// `problem` lose their user name and password before anyone can see them.
    package func report(_ name: String, problem: String?) {
        let safe = problem.map(Self.withoutURLCredentials)
        state.withLock { state in
            guard state.names.contains(name) else { return }
            state.problems[name] = safe.map { ($0, Date()) }
        }
    }

    /// What the pages show about camera `name`, or nil when it is not listed.
    package func status(of name: String) -> Status? {
        state.withLock { state in
            guard state.names.contains(name) else { return nil }
            let camera = state.current[name]
            let problem = state.problems[name]
            let shown = state.displayNames[name] ?? camera?.input.device.localizedName ?? name
            let kind: Status.State =
                switch (camera != nil, problem != nil) {
                case (true, false): .live
                case (true, true): .interrupted
                case (false, true): .offline
                case (false, false): .starting
                }
            return Status(
                name: name, displayName: shown, state: kind, reason: problem?.text,
                since: problem.map { LocalTimestamp($0.since).rfc3339 }, page: PreviewServer.path(of: name))
        }
    }

    /// Every listed camera's status, in order.
    package var statuses: [Status] { names.compactMap(status(of:)) }

    /// `text` with the user name and password of every URL in it (`scheme://user:password@host`)
    /// replaced by `***`, so an error message can be shown on a page.
    // TODO(lead): the security work (issue #30 item 1) brings one redaction function for every
    // URL that reaches text; use it here when it lands.
    package static func withoutURLCredentials(_ text: String) -> String {
        text.replacing(/(?<scheme>[A-Za-z][A-Za-z0-9+.\-]*:\/\/)[^\/\s]*@/) { match in "\(match.output.scheme)***@" }
    }

    /// A session of `camera.name` started: it replaces the one before, whose viewers are ended,
    /// and clears the camera's reported problem. A camera that is not listed is listed at the end.
    package func attach(_ camera: PreviewCamera) {
        let replaced = state.withLock { state -> PreviewCamera? in
            if !state.names.contains(camera.name) { state.names.append(camera.name) }
            state.problems[camera.name] = nil
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
