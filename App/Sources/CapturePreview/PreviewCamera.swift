import CaptureJobs
import CaptureKit
import Foundation
import Synchronization

/// One camera as the preview serves it: its name (the `/cameras/<name>/` path), its input and
/// the session outputs the page reads and steers.
///
/// - `video`: frames for the MJPEG stream (`MJPEGFanOut` becomes its delegate); its connection's
///   rotation and mirroring are what the page's controls change.
/// - `metadata`: faces and codes; `observer` becomes its delegate. A host that needs the objects
///   itself (`cvcam serve`) keeps its own delegate and forwards to `observer`.
/// - `photos`: the photo button, when present.
///
/// All geometry goes through `CaptureVideoPreviewLayer` made from `video`'s connection, so the
/// page shows exactly the library's contract.
///
/// Threading: thread-safe; every member may be used from any thread or task.
package final class PreviewCamera: Sendable {
    package let name: String
    package let input: CaptureDeviceInput
    package let video: CaptureVideoDataOutput
    package let metadata: CaptureMetadataOutput
    package let photos: CapturePhotoOutput?
    package let stream: MJPEGFanOut
    package let observer: PreviewMetadataObserver
    package let photoStore = PreviewPhotoStore()

    /// Names are path segments: letters, digits, `-`, `_` and `.` (not starting with a dot).
    package static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64 && !name.hasPrefix(".")
            && name.unicodeScalars.allSatisfy { ($0.isASCII && CharacterSet.alphanumerics.contains($0)) || "-_.".unicodeScalars.contains($0) }
    }

    /// Installs the preview's delegates on `video` and (unless `forwardsMetadata`) `metadata`.
    /// The outputs must already be in a session with `input`.
    package init(
        name: String, input: CaptureDeviceInput, video: CaptureVideoDataOutput, metadata: CaptureMetadataOutput,
        photos: CapturePhotoOutput?, streamSettings: MJPEGFanOut.Settings, forwardsMetadata: Bool = false
    ) {
        precondition(Self.isValidName(name), "camera name \(name) is not a path segment")
        self.name = name
        self.input = input
        self.video = video
        self.metadata = metadata
        self.photos = photos
        stream = MJPEGFanOut(settings: streamSettings)
        observer = PreviewMetadataObserver(clock: input.device.source.timestampClock, live: input.device.source.isLive)
        video.videoPixelFormat = .bgr
        video.setSampleBufferDelegate(stream, queue: DispatchQueue(label: "cvcam.preview.\(name).encode"))
        if !forwardsMetadata {
            metadata.setMetadataObjectsDelegate(observer, queue: DispatchQueue(label: "cvcam.preview.\(name).metadata"))
        }
    }

    /// Frames captured (delivered to the video output), streamed (encoded or passed through), and
    /// skipped by detection; viewers now.
    package var stats: PreviewMessage.Stats {
        .init(
            capturedFrames: video.deliveredFrameCount, encodedFrames: stream.encodedFrameCount,
            passedThroughFrames: stream.passedThroughFrameCount, viewers: stream.viewerCount,
            skippedFrames: metadata.skippedFrameCount, thumbnails: stream.thumbnailCount)
    }

    /// The session ended: every viewer's stream and socket end (their pages reconnect, to the
    /// next session when there is one). Idempotent.
    package func finish() {
        stream.finish()
        observer.finish()
    }

    /// The connection whose rotation and mirroring the page shows and changes.
    package var connection: CaptureConnection? { video.connection(with: .video) }

    /// The view a page described, checked: finite, positive, at most 16384 a side.
    package struct View: Sendable, Equatable {
        package var width: Double
        package var height: Double
        package var gravity: CaptureVideoPreviewLayer.VideoGravity

        /// Creates the value from each of its properties.
        package init(width: Double, height: Double, gravity: CaptureVideoPreviewLayer.VideoGravity) {
            self.width = width
            self.height = height
            self.gravity = gravity
        }
    }

    /// A preview layer following the video connection, for `view`.
    package func layer(for view: View) throws -> CaptureVideoPreviewLayer {
        guard let connection else { throw PreviewError.notConnected(name) }
        return try CaptureVideoPreviewLayer(
            connection: connection, input: input, bounds: CGRect(x: 0, y: 0, width: view.width, height: view.height),
            videoGravity: view.gravity)
    }

    /// The overlay for `view`: the current faces, codes and moving regions, the frame's rect and
    /// the rect of interest, all converted by one `CaptureVideoPreviewLayer`.
    package func geometry(for view: View) throws -> PreviewMessage.Geometry {
        // One reading of the connection for the whole drawing: a page turning mirroring on
        // between two conversions got boxes converted one way and labelled the other.
        let layer = try self.layer(for: view).snapshot()
        let scene = observer.current
        let faces = scene.faces.compactMap { face -> PreviewMessage.Face? in
            guard let converted = layer.transformedMetadataObject(for: face) else { return nil }
            return .init(
                faceID: face.faceID, score: face.confidence, bounds: .init(converted.bounds),
                deviceBounds: .init(face.bounds))
        }
        let codes = scene.codes.compactMap { code -> PreviewMessage.Code? in
            guard let converted = layer.transformedMetadataObject(for: code) else { return nil }
            return .init(
                kind: code.type.rawValue, text: Self.payloadText(code), corners: converted.corners.map(PreviewMessage.Point.init),
                deviceBounds: .init(code.bounds))
        }
        let roi = metadata.rectOfInterest
        return PreviewMessage.Geometry(
            sequence: scene.sequence, viewWidth: view.width, viewHeight: view.height, gravity: view.gravity.rawValue,
            rotation: layer.videoRotationAngle, mirrored: layer.isVideoMirrored,
            video: .init(layer.layerRectConverted(fromMetadataOutputRect: CGRect(x: 0, y: 0, width: 1, height: 1))),
            faces: faces, codes: codes, motion: scene.motion.flatMap { Self.motion($0, on: layer) },
            rectOfInterest: .init(layer.layerRectConverted(fromMetadataOutputRect: roi)), deviceRectOfInterest: .init(roi))
    }

    /// `motion`'s regions in layer space, the largest `PreviewMessage.maximumMotionRegions`,
    /// each converted as a face's bounds are (`layerRectConverted(fromMetadataOutputRect:)`: the
    /// library's `transformedMetadataObject(for:)` has no overload for motion). Nil when the
    /// object is from another input than the layer's, or no region is left.
    static func motion(_ motion: MetadataMotionObject, on layer: CaptureVideoPreviewLayer) -> PreviewMessage.Motion? {
        guard layer.inputID.map({ $0 == motion.inputID }) ?? true else { return nil }
        let regions = motion.regions.prefix(PreviewMessage.maximumMotionRegions).compactMap { device -> PreviewMessage.Motion.Region? in
            let converted = layer.layerRectConverted(fromMetadataOutputRect: device)
            // Only finite numbers reach the page (and JSON).
            guard !converted.isNull, [converted.minX, converted.minY, converted.width, converted.height, device.minX, device.minY, device.width, device.height].allSatisfy(\.isFinite)
            else { return nil }
            return .init(bounds: .init(converted), deviceBounds: .init(device))
        }
        guard !regions.isEmpty else { return nil }
        let fraction = motion.changedFraction.isFinite ? min(1, max(0, motion.changedFraction)) : 0
        return PreviewMessage.Motion(time: motion.time.seconds, changedFraction: fraction, regions: regions)
    }

    /// A tap at `point` in `view`: converted with `captureDevicePointConverted(fromLayerPoint:)`,
    /// then, as an iOS camera app does, made the focus and exposure point of interest where the
    /// camera supports them (`isFocusPointOfInterestSupported`, `isExposurePointOfInterestSupported`)
    /// and put to work: focus with `.autoFocus` (one search) or else `.continuousAutoFocus`,
    /// exposure with `.continuousAutoExposure`. A point in a letterbox bar, or a camera without
    /// points of interest, changes nothing; the answer says which of the two took the point.
    package func tap(at point: CGPoint, in view: View) throws -> PreviewMessage.TapResult {
        let devicePoint = try layer(for: view).captureDevicePointConverted(fromLayerPoint: point)
        let at = String(format: "(%.3f, %.3f)", Double(devicePoint.x), Double(devicePoint.y))
        func answer(focus: Bool = false, exposure: Bool = false, _ message: String) -> PreviewMessage.TapResult {
            .init(
                layerPoint: .init(point), devicePoint: .init(devicePoint), focusSet: focus, exposureSet: exposure, message: message)
        }
        guard (0...1).contains(devicePoint.x) && (0...1).contains(devicePoint.y) else {
            return answer("the click was outside the frame, in a bar beside the picture (device point \(at)); nothing changed")
        }
        let device = input.device
        let focusMode: CaptureDevice.FocusMode? =
            !device.isFocusPointOfInterestSupported ? nil
            : device.isFocusModeSupported(.autoFocus) ? .autoFocus
            : device.isFocusModeSupported(.continuousAutoFocus) ? .continuousAutoFocus : nil
        let exposes = device.isExposurePointOfInterestSupported && device.isExposureModeSupported(.continuousAutoExposure)
        guard focusMode != nil || exposes else {
            return answer(
                "\(device.localizedName) cannot focus or expose on a chosen point: not supported (isFocusPointOfInterestSupported and isExposurePointOfInterestSupported are false); the click was at device point \(at)")
        }
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        if let focusMode {
            try device.setFocusPointOfInterest(devicePoint)
            try device.setFocusMode(focusMode)
        }
        if exposes {
            try device.setExposurePointOfInterest(devicePoint)
            try device.setExposureMode(.continuousAutoExposure)
        }
        let set = [focusMode.map { "focus (\($0.rawValue))" }, exposes ? "exposure (continuousAutoExposure)" : nil].compactMap { $0 }
        let words = [focusMode == nil ? nil : "focusing", exposes ? "exposing" : nil].compactMap { $0 }.joined(separator: " and ")
        let missing = [focusMode == nil ? "focus" : nil, exposes ? nil : "expose"].compactMap { $0 }
        return answer(
            focus: focusMode != nil, exposure: exposes,
            "\(words.prefix(1).uppercased() + words.dropFirst()) on the point clicked: \(set.joined(separator: " and ")) point of interest set at device point \(at)"
                + (missing.isEmpty ? "" : "; \(device.localizedName) cannot \(missing[0]) on a chosen point"))
    }

    /// A drag over `rect` in `view` becomes the metadata output's `rectOfInterest`
    /// (`metadataOutputRectConverted(fromLayerRect:)`, clipped to the frame).
    package func setRectOfInterest(fromLayerRect rect: CGRect, in view: View) throws {
        let device = try layer(for: view).metadataOutputRectConverted(fromLayerRect: rect)
        let clipped = device.standardized.intersection(CGRect(x: 0, y: 0, width: 1, height: 1))
        guard !clipped.isNull, clipped.width > 0, clipped.height > 0 else { throw PreviewError.rectOutsideFrame }
        metadata.rectOfInterest = clipped
        observer.touch()
    }

    /// Looks at the whole frame again.
    package func resetRectOfInterest() {
        metadata.rectOfInterest = CGRect(x: 0, y: 0, width: 1, height: 1)
        observer.touch()
    }

    /// Sets the connection's rotation and mirroring (the page's controls), and the photo
    /// output's, so a photo is turned as the preview shows it.
    package func setConnection(rotation: Double, mirrored: Bool) throws {
        guard let connection else { throw PreviewError.notConnected(name) }
        guard connection.isVideoRotationAngleSupported(rotation) else { throw PreviewError.badRotation(rotation) }
        for c in [connection, photos?.connection(with: .video)].compactMap({ $0 }) {
            c.videoRotationAngle = rotation
            c.isVideoMirrored = mirrored
        }
        observer.touch()
    }

    /// A code's payload for the page: its text, or its bytes in base64 when it is not UTF-8.
    package static func payloadText(_ code: MetadataMachineReadableCodeObject) -> String {
        code.stringValue ?? ("bytes:" + Data(code.payload).base64EncodedString())
    }
}

/// What went wrong with a page's request; the text goes back to the page as an `error` message.
package enum PreviewError: Error, CustomStringConvertible {
    case notConnected(String)
    case badRotation(Double)
    case rectOutsideFrame
    case badMessage(String)
    case noPhotoOutput

    package var description: String {
        switch self {
        case .notConnected(let name): "camera \(name) has no video connection (is its session configured?)"
        case .badRotation(let angle): "rotation \(angle) is not one of 0, 90, 180, 270"
        case .rectOutsideFrame: "the rectangle lies outside the frame; drag over the video"
        case .badMessage(let why): "bad message: \(why)"
        case .noPhotoOutput: "this camera has no photo output"
        }
    }
}

/// The current faces, codes and motion of one camera, in device space, and the recent events;
/// the preview's metadata delegate.
///
/// Faces are replaced by every frame's objects. A code stays from its `appear` to its `leave`
/// (codes are delivered only when due, not every frame). Motion is the newest delivered frame's
/// `MetadataMotionObject`: a frame analysed without one (nothing moves now) or the motion's
/// `motionEnded` clears it. Each change bumps `sequence` and wakes
/// every subscriber, which then computes its own view's geometry.
///
/// Threading: thread-safe; the delegate calls come on the metadata output's queue.
package final class PreviewMetadataObserver: CaptureMetadataOutputObjectsDelegate, Sendable {
    package struct Scene: Sendable {
        package var sequence = 0
        package var faces: [MetadataFaceObject] = []
        package var codes: [MetadataMachineReadableCodeObject] = []
        /// What moves now (nil: nothing, or motion detection is off).
        package var motion: MetadataMotionObject?

        /// Creates the value from each of its properties.
        package init(
            sequence: Int = 0, faces: [MetadataFaceObject] = [], codes: [MetadataMachineReadableCodeObject] = [],
            motion: MetadataMotionObject? = nil
        ) {
            self.sequence = sequence
            self.faces = faces
            self.codes = codes
            self.motion = motion
        }
    }
    private struct State {
        package var scene = Scene()
        package var events: [PreviewMessage.Event] = []
        package var subscribers: [Int: AsyncStream<Int>.Continuation] = [:]
        package var eventSubscribers: [Int: AsyncStream<PreviewMessage.Event>.Continuation] = [:]
        package var nextID = 0
        /// After `finish()`, new subscriptions end at once.
        package var finished = false
    }
    private let state = Mutex(State())
    /// The clock of the frames' times, and whether they come from a live source (a camera or
    /// a stream): a live source's events carry their wall-clock time.
    package let clock: FrameClock
    package let isLive: Bool

    /// An observer for frames whose times are on `clock`, from a live source or not.
    package init(clock: FrameClock = .media, live: Bool = false) {
        self.clock = clock
        isLive = live
    }

    /// How many recent events a page that connects is shown.
    package static let recentEventCount = 20

    package var current: Scene { state.withLock { $0.scene } }
    package var recentEvents: [PreviewMessage.Event] { state.withLock { $0.events } }

    /// Changes as they happen: each element is the new `sequence`; a slow reader sees only the
    /// newest (geometry is recomputed from the current scene, so nothing is lost by skipping).
    package func changes() -> AsyncStream<Int> { subscribe(\.subscribers, bufferingNewest: 1) }

    /// Events as they happen (bounded: a reader that falls behind loses the oldest).
    package func events() -> AsyncStream<PreviewMessage.Event> {
        subscribe(\.eventSubscribers, bufferingNewest: Self.recentEventCount)
    }

    /// A stream kept in `list` until its reader stops; after `finish()`, one that has ended.
    private func subscribe<Element: Sendable>(
        _ list: WritableKeyPath<State, [Int: AsyncStream<Element>.Continuation]>, bufferingNewest limit: Int
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(limit))
        let id = state.withLock { state -> Int? in
            guard !state.finished else { return nil }
            state.nextID += 1
            state[keyPath: list][state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        // IDs are unique across both lists, so removing from both removes just this one.
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { state in
                _ = state.subscribers.removeValue(forKey: id)
                _ = state.eventSubscribers.removeValue(forKey: id)
            }
        }
        return stream
    }

    /// Wakes subscribers without a metadata change (the rect of interest or the connection changed).
    package func touch() { update { _ in } }

    /// Ends every subscriber's streams (the camera stopped).
    package func finish() {
        let (all, allEvents) = state.withLock { state in
            state.finished = true
            defer {
                state.subscribers = [:]
                state.eventSubscribers = [:]
            }
            return (Array(state.subscribers.values), Array(state.eventSubscribers.values))
        }
        for c in all { c.finish() }
        for c in allEvents { c.finish() }
    }

    /// A code type as people call it: "QR code", "EAN13 barcode".
    package static func codeName(_ type: MetadataObjectType) -> String {
        switch type {
        case .qr: "QR code"
        case .microQR: "Micro QR code"
        case .dataMatrix: "Data Matrix code"
        case .aztec: "Aztec code"
        case .pdf417: "PDF417 code"
        default: type.rawValue.uppercased() + " barcode"
        }
    }

    /// Records an event a host (or the photo button) wants on the page's list.
    package func post(_ event: PreviewMessage.Event) {
        let listeners = state.withLock {
            $0.events.append(event)
            if $0.events.count > Self.recentEventCount { $0.events.removeFirst($0.events.count - Self.recentEventCount) }
            return Array($0.eventSubscribers.values)
        }
        for c in listeners { c.yield(event) }
    }

    private func update(_ change: (inout Scene) -> Void) {
        let (sequence, listeners) = state.withLock {
            change(&$0.scene)
            $0.scene.sequence += 1
            return ($0.scene.sequence, Array($0.subscribers.values))
        }
        for c in listeners { c.yield(sequence) }
    }

    package func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [any MetadataObject], from connection: CaptureConnection
    ) {
        let faces = metadataObjects.compactMap { $0 as? MetadataFaceObject }
        let codes = metadataObjects.compactMap { $0 as? MetadataMachineReadableCodeObject }
        let motion = metadataObjects.lazy.compactMap { $0 as? MetadataMotionObject }.first
        update { scene in
            // Faces come with every frame that has any; codes only when due (appear, repeat),
            // so a code keeps its last position until its `codeLeft` event removes it. Every
            // frame that moved is delivered with its motion, so one without it is still.
            scene.faces = faces
            scene.motion = motion
            for code in codes {
                scene.codes.removeAll { $0.payload == code.payload && $0.type == code.type }
                scene.codes.append(code)
            }
        }
    }

    package func metadataOutput(_ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection) {
        var left: [MetadataMachineReadableCodeObject] = []
        var motionEnded = false
        for event in events {
            switch event {
            case .faceEntered(let f):
                post(.init(time: f.time, clock: clock, live: isLive, text: "face \(f.faceID) came into view"))
            case .faceLeft(let f):
                post(.init(time: f.time, clock: clock, live: isLive, text: "face \(f.faceID) left"))
            case .codeAppeared(let c):
                post(.init(time: c.time, clock: clock, live: isLive, text: "\(Self.codeName(c.type)) read: \(PreviewCamera.payloadText(c))"))
            case .codeLeft(let c):
                left.append(c)
                post(.init(time: c.time, clock: clock, live: isLive, text: "\(Self.codeName(c.type)) gone: \(PreviewCamera.payloadText(c))"))
            case .motionStarted(let m):
                post(.init(time: m.time, clock: clock, live: isLive, text: "motion started"))
            case .motionEnded(let m):
                motionEnded = true
                post(.init(time: m.time, clock: clock, live: isLive, text: "motion ended"))
            case .faceUpdated, .codeRepeated:
                break
            }
        }
        // An ended motion leaves no box behind, even when no frame was delivered after it
        // (the stream ended, or the frames since were spared).
        if !left.isEmpty || (motionEnded && current.motion != nil) {
            update { scene in
                scene.codes.removeAll { code in left.contains { $0.payload == code.payload && $0.type == code.type } }
                if motionEnded { scene.motion = nil }
            }
        }
    }
}

/// The photos the page's button took, kept in memory for download (the newest few).
///
/// Threading: thread-safe.
package final class PreviewPhotoStore: Sendable {
    package struct Stored: Sendable {
        package var id: Int
        package var data: Data

        /// Creates the value from each of its properties.
        package init(id: Int, data: Data) {
            self.id = id
            self.data = data
        }
    }
    private let photos = Mutex<[Stored]>([])
    package static let capacity = 8

    package func add(_ data: Data, id: Int) {
        photos.withLock {
            $0.append(.init(id: id, data: data))
            if $0.count > Self.capacity { $0.removeFirst($0.count - Self.capacity) }
        }
    }

    package func photo(id: Int) -> Data? { photos.withLock { $0.first { $0.id == id }?.data } }
}
