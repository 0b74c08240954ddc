import CaptureJobs
import CaptureKit
import Foundation
import HummingbirdWebSocket
import Synchronization

/// One page's WebSocket (see `PreviewMessage` for the protocol).
///
/// The page says its view (size and gravity) and changes the connection's rotation and
/// mirroring; from then on it gets a `geometry` message after every metadata change, computed
/// for its own view, plus events as they happen and `stats` twice a second. Taps, drags and the
/// photo button are answered in order. Everything outgoing goes through one queue (`outbox`)
/// with one writer; when a page reads too slowly the oldest waiting messages are dropped.
///
/// When the camera's session ends (`PreviewCamera.finish`), the server closes the socket with
/// 1001 (going away); the page then reconnects.
///
/// Threading: `run` once per connection, in its own task (Hummingbird's WebSocket handler).
package struct PreviewSocket: Sendable {
    package let camera: PreviewCamera
    /// Messages waiting for a slow page before the oldest go.
    package static let outboxLimit = 64
    /// Largest message accepted from a page.
    package static let maximumMessageSize = 4096

    private final class ViewBox: Sendable {
        package let view = Mutex<PreviewCamera.View?>(nil)
    }

    package func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let (outbox, post) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(Self.outboxLimit))
        let box = ViewBox()
        let camera = self.camera
        for event in camera.observer.recentEvents { post.yield(PreviewMessage.json(event)) }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await text in outbox {
                    do { try await outbound.write(.text(text)) } catch { return }
                }
            }
            group.addTask {
                for await _ in camera.observer.changes() {
                    guard let view = box.view.withLock({ $0 }) else { continue }
                    post.yield(Self.geometryMessage(camera, view))
                }
                // The changes end when the camera's session ended: say so, and the page
                // reconnects (to the next session, when the camera comes back).
                guard !Task.isCancelled else { return }
                try? await outbound.close(.goingAway, reason: "the camera's session ended")
            }
            group.addTask {
                for await event in camera.observer.events() { post.yield(PreviewMessage.json(event)) }
            }
            group.addTask {
                while !Task.isCancelled {
                    post.yield(PreviewMessage.json(camera.stats))
                    try? await Task.sleep(for: .milliseconds(500))
                }
            }
            do {
                for try await message in inbound.messages(maxSize: Self.maximumMessageSize) {
                    guard case .text(let text) = message else { continue }
                    for reply in handle(text, box: box, post: post) { post.yield(reply) }
                }
            } catch {
                // The page went away or sent too much: the connection ends either way.
            }
            post.finish()
            group.cancelAll()
        }
    }

    package static func geometryMessage(_ camera: PreviewCamera, _ view: PreviewCamera.View) -> String {
        do { return PreviewMessage.json(try camera.geometry(for: view)) } catch {
            return PreviewMessage.json(PreviewMessage.Failure(message: SystemErrorText.reason(for: error)))
        }
    }

    /// The answers to one message from the page.
    private func handle(_ text: String, box: ViewBox, post: AsyncStream<String>.Continuation) -> [String] {
        do {
            let message: PreviewMessage.Incoming
            do { message = try JSONDecoder().decode(PreviewMessage.Incoming.self, from: Data(text.utf8)) } catch {
                throw PreviewError.badMessage("not a preview message")
            }
            switch message.type {
            case .view:
                let view = try Self.view(from: message)
                box.view.withLock { $0 = view }
                return [Self.geometryMessage(camera, view)]
            case .connection:
                guard let rotation = message.rotation, let mirrored = message.mirrored else {
                    throw PreviewError.badMessage("connection needs rotation and mirrored")
                }
                try camera.setConnection(rotation: rotation, mirrored: mirrored)
                return []  // the observer's change brings the new geometry
            case .tap:
                let view = try currentView(box)
                let point = try Self.point(message)
                return [PreviewMessage.json(try camera.tap(at: point, in: view))]
            case .drag:
                let view = try currentView(box)
                let origin = try Self.point(message)
                guard let w = message.width, let h = message.height, w.isFinite, h.isFinite else {
                    throw PreviewError.badMessage("drag needs x, y, width and height")
                }
                try camera.setRectOfInterest(
                    fromLayerRect: CGRect(x: origin.x, y: origin.y, width: w, height: h), in: view)
                return []
            case .resetRectOfInterest:
                camera.resetRectOfInterest()
                return []
            case .photo:
                try PreviewPhotoTaker.take(camera: camera, post: post)
                return []
            }
        } catch {
            return [PreviewMessage.json(PreviewMessage.Failure(message: SystemErrorText.reason(for: error)))]
        }
    }

    private func currentView(_ box: ViewBox) throws -> PreviewCamera.View {
        guard let view = box.view.withLock({ $0 }) else { throw PreviewError.badMessage("send view first") }
        return view
    }

    package static func point(_ message: PreviewMessage.Incoming) throws -> CGPoint {
        guard let x = message.x, let y = message.y, x.isFinite, y.isFinite else {
            throw PreviewError.badMessage("\(message.type.rawValue) needs finite x and y")
        }
        return CGPoint(x: x, y: y)
    }

    /// A page's view, checked as `CaptureVideoPreviewLayer` and the CLI's --view check sizes.
    package static func view(from message: PreviewMessage.Incoming) throws -> PreviewCamera.View {
        guard let width = message.width, let height = message.height, width.isFinite, height.isFinite,
            (1...16384).contains(width), (1...16384).contains(height)
        else { throw PreviewError.badMessage("view needs width and height from 1 to 16384") }
        guard let gravity = CaptureVideoPreviewLayer.VideoGravity(rawValue: message.gravity ?? "resizeAspect") else {
            throw PreviewError.badMessage("gravity must be resize, resizeAspect or resizeAspectFill")
        }
        return .init(width: width, height: height, gravity: gravity)
    }

    /// Creates the value from each of its properties.
    package init(camera: PreviewCamera) {
        self.camera = camera
    }
}

/// The photo button: `capturePhoto(with:delegate:)` on the camera's photo output; the photo is
/// kept in the camera's `PreviewPhotoStore` and the page gets a `photo` message with its URL.
///
/// Threading: thread-safe; the delegate runs on the photo output's queue.
package final class PreviewPhotoTaker: CapturePhotoCaptureDelegate, Sendable {
    package let camera: PreviewCamera
    package let post: AsyncStream<String>.Continuation

    private init(camera: PreviewCamera, post: AsyncStream<String>.Continuation) {
        self.camera = camera
        self.post = post
    }

    package static func take(camera: PreviewCamera, post: AsyncStream<String>.Continuation) throws {
        guard let photos = camera.photos else { throw PreviewError.noPhotoOutput }
        try photos.capturePhoto(with: CapturePhotoSettings(), delegate: PreviewPhotoTaker(camera: camera, post: post))
    }

    package func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?) {
        guard error == nil, let data = photo.fileDataRepresentation() else {
            post.yield(PreviewMessage.json(PreviewMessage.Failure(message: "photo failed: \(error.map { CaptureError.delegated($0).message } ?? "no data")")))
            return
        }
        let id = photo.resolvedSettings.uniqueID
        camera.photoStore.add(data, id: Int(id))
        let size = photo.resolvedSettings.photoDimensions
        post.yield(
            PreviewMessage.json(
                PreviewMessage.Photo(
                    url: "\(PreviewServer.path(of: camera))/photos/\(id).jpg", width: size.width, height: size.height,
                    bytes: data.count)))
        camera.observer.post(.init(time: photo.timestamp, clock: camera.observer.clock, live: camera.observer.isLive, text: "photo \(id) taken (\(size), \(data.count) bytes)"))
    }
}
