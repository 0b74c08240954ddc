import CaptureJobs
import Dispatch
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import ServiceLifecycle
import Synchronization

/// The preview's HTTP server (Hummingbird 2 with WebSockets) for a list of cameras.
///
/// Routes (nothing else exists: any other path, `..` included, is 404):
/// - `GET /`: the list of cameras, each with its display name, status and a thumbnail (with
///   exactly one camera, a redirect to it). `GET /cameras.json`: the same statuses as JSON.
/// - `GET /assets/preview.js`, `/assets/index.js`, `/assets/preview.css`: the pages' code,
///   embedded in the binary.
/// - `GET /cameras/<name>`: the page. `GET /cameras/<name>/stream.mjpeg`: the video.
///   `GET /cameras/<name>/photos/<n>.jpg`: a photo the page took. `GET /cameras/<name>/stats.json`:
///   frames captured, streamed and skipped, and viewers. `GET /cameras/<name>/status.json`: live,
///   starting, or why not (`PreviewDirectory.Status`). `GET /cameras/<name>/thumbnail.jpg`: a small
///   recent frame, made on demand (`MJPEGFanOut.thumbnail()`). `/cameras/<name>/ws`: the
///   WebSocket (`PreviewSocket`).
///
/// Every connection passes `HTTPConnectionGuard` first (limits, methods, the `Host` names of
/// `HostAllowlist`: no DNS rebinding), then every request, the WebSocket upgrade included,
/// `PreviewAccess`. `cvcam preview`
/// lists one camera; `cvcam serve` lists each of its own and attaches every new session
/// (`PreviewDirectory`).
///
/// Threading: a value type; `start(on:)` from any thread, and the server then runs on
/// Hummingbird's event loops and the Swift concurrency pool, never on the caller's thread.
package struct PreviewServer: Sendable {
    package let cameras: PreviewDirectory
    package let token: String?
    package let logger: Logger
    /// Host names answered besides the listener's own (`--allow-host`; `HostAllowlist`).
    package let allowedHosts: [String]
    /// What each connection is held to (`HTTPConnectionGuard`).
    package let limits: HTTPServerLimits
    /// Each camera's snapshots, clips and latest facts, for the dashboard's routes
    /// (`PreviewServer+Library.swift`); nil: no such routes.
    package var library: PreviewLibrary?

    package init(
        cameras: PreviewDirectory, token: String?, allowedHosts: [String] = [], limits: HTTPServerLimits = .standard,
        logger: Logger = Logger(label: "cvcam.preview")
    ) {
        self.cameras = cameras
        self.token = token
        self.allowedHosts = allowedHosts
        self.limits = limits
        self.logger = logger
    }

    package init(
        cameras: [PreviewCamera], token: String?, allowedHosts: [String] = [], limits: HTTPServerLimits = .standard,
        logger: Logger = Logger(label: "cvcam.preview")
    ) {
        self.init(cameras: PreviewDirectory(cameras: cameras), token: token, allowedHosts: allowedHosts, limits: limits, logger: logger)
    }

    /// The checks every connection to a server listening on `address` passes first.
    package func policy(listeningOn address: ListenAddress) -> HTTPRequestPolicy {
        HTTPRequestPolicy(
            limits: limits, hosts: HostAllowlist(listenHost: address.host, allowedNames: allowedHosts, hasToken: token != nil),
            allowHostHint: "--allow-host NAME (cvcam preview) or preview.allowedHosts (cvcam serve)")
    }

    /// The camera `name` with a running session; 404 when it is not listed, 503 while it has
    /// no session (it is starting, failed, or being reloaded), saying why when its host said.
    package func camera(named name: String?) throws -> PreviewCamera {
        if let camera = cameras.camera(named: name) { return camera }
        guard let name, let status = cameras.status(of: name) else { throw HTTPError(.notFound) }
        let why = status.reason.map { ": \($0)" } ?? " yet (it is starting)"
        throw HTTPError(.serviceUnavailable, message: "camera \(name) is not streaming\(why)\n")
    }

    /// The page path of a camera.
    package static func path(of camera: PreviewCamera) -> String { path(of: camera.name) }
    package static func path(of name: String) -> String { "/cameras/\(name)" }

    package func makeRouter() -> Router<BasicWebSocketRequestContext> {
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.add(middleware: PreviewAccess(token: token))
        let cameras = self.cameras
        let hasLibrary = library != nil
        router.get("/") { _, _ -> Response in
            let names = cameras.names
            // One camera goes straight to its page, unless the index is the dashboard.
            if names.count == 1, !hasLibrary {
                return Response(status: .seeOther, headers: [.location: Self.path(of: names[0])])
            }
            return Self.text(PreviewAssets.listPage(cameras.statuses, library: hasLibrary), type: "text/html; charset=utf-8")
        }
        router.get("/cameras.json") { _, _ in Self.text(PreviewMessage.json(cameras.statuses), type: "application/json") }
        addLibraryRoutes(to: router)
        router.get("/assets/preview.js") { _, _ in Self.text(PreviewAssets.script, type: "text/javascript; charset=utf-8") }
        router.get("/assets/index.js") { _, _ in Self.text(PreviewAssets.indexScript, type: "text/javascript; charset=utf-8") }
        router.get("/assets/preview.css") { _, _ in Self.text(PreviewAssets.style, type: "text/css; charset=utf-8") }
        router.get("/cameras/:name") { _, context -> Response in
            guard let name = context.parameters.get("name"), let status = cameras.status(of: name) else {
                throw HTTPError(.notFound)
            }
            return Self.text(
                PreviewAssets.page(name: name, displayName: status.displayName, base: Self.path(of: name), cameraCount: cameras.names.count),
                type: "text/html; charset=utf-8")
        }
        router.get("/cameras/:name/status.json") { _, context -> Response in
            guard let name = context.parameters.get("name"), let status = cameras.status(of: name) else {
                throw HTTPError(.notFound)
            }
            return Self.text(PreviewMessage.json(status), type: "application/json")
        }
        router.get("/cameras/:name/thumbnail.jpg") { _, context -> Response in
            let camera = try camera(named: context.parameters.get("name"))
            guard let jpeg = await camera.stream.thumbnail() else {
                throw HTTPError(.serviceUnavailable, message: "camera \(camera.name) sent no frame for a thumbnail\n")
            }
            return Response(status: .ok, headers: [.contentType: "image/jpeg"], body: .init(byteBuffer: ByteBuffer(bytes: jpeg)))
        }
        router.get("/cameras/:name/stream.mjpeg") { _, context -> Response in
            let camera = try camera(named: context.parameters.get("name"))
            let frames = camera.stream.frames()
            return Response(
                status: .ok, headers: [.contentType: MJPEGFanOut.contentType],
                body: ResponseBody { writer in
                    // A viewer that went away makes the write throw, which ends its stream.
                    for await frame in frames { try await writer.write(frame.part) }
                    try await writer.finish(nil)
                })
        }
        router.get("/cameras/:name/stats.json") { _, context -> Response in
            let camera = try camera(named: context.parameters.get("name"))
            return Self.text(PreviewMessage.json(camera.stats), type: "application/json")
        }
        router.get("/cameras/:name/photos/:photo") { _, context -> Response in
            let camera = try camera(named: context.parameters.get("name"))
            guard let file = context.parameters.get("photo"), file.hasSuffix(".jpg"),
                let id = Int(file.dropLast(4)), let data = camera.photoStore.photo(id: id)
            else { throw HTTPError(.notFound) }
            return Response(
                status: .ok,
                headers: [.contentType: "image/jpeg", .contentDisposition: "attachment; filename=\"\(camera.name)-\(id).jpg\""],
                body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        router.ws("/cameras/:name/ws") { _, context in
            cameras.camera(named: context.parameters.get("name")) == nil ? .dontUpgrade : .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            guard let camera = cameras.camera(named: context.requestContext.parameters.get("name")) else { return }
            try await PreviewSocket(camera: camera).run(inbound: inbound, outbound: outbound)
        }
        return router
    }

    package static func text(_ body: String, type: String) -> Response {
        Response(status: .ok, headers: [.contentType: type], body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    /// A server that is listening.
    package final class Running: Sendable {
        /// The port it listens on (the one picked, when asked for port 0).
        package let port: Int
        private let group: ServiceGroup
        private let task: Task<Void, Never>
        private let ended: DispatchSemaphore

        fileprivate init(port: Int, group: ServiceGroup, task: Task<Void, Never>, ended: DispatchSemaphore) {
            self.port = port
            self.group = group
            self.task = task
            self.ended = ended
        }

        /// Stops serving, waiting up to `timeout` seconds: a graceful shutdown first (end the
        /// MJPEG streams before, so no response is left open), then cancellation.
        package func stop(timeout: Double = 2) {
            let group = self.group
            Task { await group.triggerGracefulShutdown() }
            if ended.wait(timeout: .now() + timeout) == .timedOut {
                task.cancel()
                _ = ended.wait(timeout: .now() + 1)
            }
        }
    }

    /// Binds `address` and starts serving; returns once it listens.
    /// - Throws: `CLIError.message` naming the address when it cannot be bound (in use, not
    ///   this machine's, no permission), or when the server did not start within 60 s.
    package func start(on address: ListenAddress) throws -> Running {
        let bound = Mutex<Result<Int, any Error>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let ended = DispatchSemaphore(value: 0)
        let router = makeRouter()
        let app = Application(
            router: router, server: policy(listeningOn: address).http1WebSocketUpgrade(webSocketRouter: router),
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: nil),
            onServerRunning: { channel in
                bound.withLock { $0 = .success(channel.localAddress?.port ?? address.port) }
                ready.signal()
            },
            logger: logger)
        // No signal handling here: the capture job owns SIGINT/SIGTERM and stops us.
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], cancellationSignals: [], logger: logger)
        let task = Task {
            do {
                try await group.run()
            } catch {
                bound.withLock { if $0 == nil { $0 = .failure(error) } }
                ready.signal()
            }
            ended.signal()
        }
        _ = ready.wait(timeout: .now() + 60)
        let outcome = bound.withLock { $0 }
        let running: (Int) -> Running = { Running(port: $0, group: group, task: task, ended: ended) }
        switch outcome {
        case .success(let port): return running(port)
        case .failure(let error):
            throw CLIError.message(ListenFailure.message("the preview", address: "\(address)", error, option: "--listen (or preview.listen)"))
        case nil:
            task.cancel()
            throw CLIError.message("the preview server did not start listening on \(address) within 60 s")
        }
    }
}
