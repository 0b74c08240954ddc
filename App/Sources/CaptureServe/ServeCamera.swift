import CaptureJobs
import CaptureKit
import CapturePreview
import Foundation
import Logging

/// One camera of `cvcam serve`: its own `CaptureSession` with a metadata output (faces and
/// codes), snapshot rules, a photo output for the `snapshot` command and optional recording,
/// publishing what happens to the camera's topics (`CameraTopics`).
///
/// A camera that fails (it cannot be opened, is unplugged and the session gives up, a stream
/// stays down) goes `offline` and is opened again after 0.5 s, doubling to 30 s; the other
/// cameras never notice. An input that ends by itself (a file, a finite synthetic scene) stays
/// `offline`. An unplug the session rides out (`interrupted`) is `offline` until the camera is back.
///
/// Threading: `start`, `stop` and `handle(command:)` may be called from any thread; the camera
/// runs on its own thread.
package final class ServeCamera: @unchecked Sendable {
    // @unchecked: the mutable state is guarded by `lock`; the rest is immutable.

    package let config: ServeConfig.Camera
    package let topics: CameraTopics
    private let publisher: any ServePublisher
    private let statsInterval: Double?
    private let metrics: CameraMetricsSink?
    private let preview: ServePreview?
    private let logger: Logger

    private let lock = NSLock()
    private var running: Running?
    private var stopping = false
    private var isOnline = false
    private var facesInView = Set<Int>()
    /// Whether frames flowed at some point: going online again after that is a reconnection.
    private var wasOnline = false
    private var commandBucket: CommandRateLimiter
    /// Refusals not yet logged (the log gets one line a second at most; each refusal is answered on MQTT).
    private var unloggedRefusals = 0
    private var lastRefusalLog = 0.0
    /// Between a `motion` `start` and its `end` (the retained `motion` topic says `ON`).
    private var motionActive = false
    private var thread: JoinedThread?
    private let wake = DispatchSemaphore(value: 0)
    /// Times the input was opened again after failing, successfully or not.
    package private(set) var reconnectAttempts = 0
    /// Times the input came back (frames flowing again) after it was lost.
    package private(set) var reconnects = 0

    /// What one run of the session holds, for commands and stopping.
    private struct Running {
        package let session: CaptureSession
        package let metadata: CaptureMetadataOutput
        package let photo: CapturePhotoOutput
        package let printer: EventPrinter
        package let types: [MetadataObjectType]
        package let device: CaptureDevice
    }

    package init(
        config: ServeConfig.Camera, prefix: String, publisher: any ServePublisher, statsInterval: Double?,
        metrics: CameraMetricsSink? = nil, preview: ServePreview? = nil
    ) {
        self.config = config
        self.preview = preview
        commandBucket = CommandRateLimiter(config.commandLimit, now: CommandRateLimiter.monotonicSeconds())
        topics = CameraTopics(prefix: prefix, camera: config.name)
        self.publisher = publisher
        self.statsInterval = statsInterval
        self.metrics = metrics
        var logger = Logger(label: "cvcam.serve.\(config.name)")
        logger[metadataKey: "camera"] = "\(config.name)"
        self.logger = logger
    }

    package var online: Bool { lock.withLock { isOnline } }

    /// The photo output of the running session, whose photos go to MQTT (tests).
    package var snapshotOutput: CapturePhotoOutput? { lock.withLock { running?.photo } }

    /// Starts the camera's thread.
    package func start() {
        lock.withLock {
            guard thread == nil else { return }
            thread = JoinedThread(name: "cvcam.serve") { [self] in loop() }
        }
    }

    /// Stops the session (snapshots being chosen are written, a recording is finished) and
    /// joins the camera's thread (it has exited when this returns); publishes `offline`.
    package func stop() {
        let session: CaptureSession? = lock.withLock {
            stopping = true
            return running?.session
        }
        wake.signal()
        try? session?.stopRunning()
        if let running = lock.withLock({ thread }) {
            running.join()
            lock.withLock { thread = nil }
        }
    }

    /// Publishes the retained state again (after the broker came back: it may have lost it).
    /// The `faces` state only for a camera that looks for faces.
    package func republishState() {
        let (available, faces, moving) = lock.withLock { (isOnline, facesInView, motionActive) }
        publisher.publish(topic: topics.availability, text: available ? CameraTopics.online : CameraTopics.offline, retain: true, latestOnly: true)
        if config.faces != nil { publishFaces(faces) }
        if config.motionArguments != nil { publishMotion(moving) }
    }

    private func publishFaces(_ faces: Set<Int>) {
        publisher.publish(topic: topics.faces, text: FacesState(faceIDs: faces).json, retain: true, latestOnly: true)
    }

    // MARK: The run loop

    private enum Outcome {
        case stopped
        case ended
        case failed(String)
    }

    private var isStopping: Bool { lock.withLock { stopping } }

    private func loop() {
        var delay = 0.5
        while !isStopping {
            let started = Date()
            let outcome = runOnce()
            setOnline(false)
            switch outcome {
            case .stopped: return
            case .ended:
                logger.notice("the input ended; the camera stays offline until the daemon is reloaded")
                preview?.directory.report(config.name, problem: "the input ended; the camera stays off until the daemon is reloaded")
                return
            case .failed(let message):
                logger.error("\(TerminalText.escaped(message)); trying again in \(delay) s")
                publishEvent(ErrorEvent(code: "cameraFailed", message: message + "; trying again in \(delay) s"))
                preview?.directory.report(config.name, problem: message + "; trying again in \(delay) s")
            }
            // A camera that ran a good while failed afresh: start the backoff again.
            if Date().timeIntervalSince(started) > 60 { delay = 0.5 }
            _ = wake.wait(timeout: .now() + delay)
            delay = min(delay * 2, 30)
            guard !isStopping else { return }
            lock.withLock { reconnectAttempts += 1 }
            metrics?.inputReconnectAttempted()
        }
    }

    /// Opens the input, runs the session until it stops, and says why it stopped.
    private func runOnce() -> Outcome {
        let input = config.inputOptions
        let device: CaptureDevice
        do { device = try input.makeDevice() } catch {
            // The library's message usually names the input already ("cannot open URL: …").
            let message = Redaction.redact(Self.message(error))
            if message.hasPrefix("cannot open ") { return .failed(message) }
            return .failed("cannot open \(Redaction.redact(input.input ?? input.device ?? "the camera")): \(message)")
        }
        let session = CaptureSession()
        metrics?.sessionRestarted()
        let printer = EventPrinter(
            json: true, preview: nil, statusLine: nil, clock: device.source.timestampClock,
            sink: { [weak self] body, line in self?.route(body, line) })
        var tap: (@Sendable (LatencyRecorder.Stage, Double) -> Void)?
        if let metrics { tap = { metrics.observeDetection(stage: $0, milliseconds: $1) } }
        let latency = LatencyRecorder(tap: tap)
        var watcher: SnapshotWatcher?
        let metadata: CaptureMetadataOutput
        let photo = CapturePhotoOutput()
        let types: [MetadataObjectType]
        var recorder: SegmentRecorder?
        var clips: ServeClips?
        var previewCamera: PreviewCamera?
        do {
            try session.setSessionPreset(input.sessionPreset)
            let deviceInput = try CaptureDeviceInput(device: device)
            try session.addInput(deviceInput)
            if let watch = config.snapshotOptions {
                watcher = try makeWatcher(watch, device: device, input: input, printer: printer)
            }
            var faceStage: (any FaceMetadataStage)?
            if let faces = config.faceOptions {
                faces.applyModelsFolder()
                let timed = TimedFaceStage(DefaultFaceStage(detector: try faces.detector(for: input)), recorder: latency)
                if let watcher {
                    faceStage = FaceObservingStage(wrapping: timed) { frame, found in watcher.consider(frame, faces: found) }
                } else {
                    faceStage = timed
                }
            }
            let codeStage = try config.codes.map { _ in
                TimedCodeStage(DefaultCodeStage(detector: try CodeDetector()), recorder: latency)
            }
            metadata = CaptureMetadataOutput(faceStage: faceStage, codeStage: codeStage)
            types = try Self.types(config, available: metadata.availableMetadataObjectTypes)
            try metadata.setMetadataObjectTypes(types)
            metadata.rectOfInterest = input.regionOfInterest
            if let faces = config.faces, let options = config.faceOptions {
                metadata.faceUpdateInterval = faces.updateInterval
                metadata.faceScanInterval = options.faceScanInterval
            }
            if let codes = config.codes { metadata.codeRepeatInterval = codes.repeatInterval }
            metadata.motionDetection = config.motionDetection
            let log = ServeMetadataLog(
                faces: config.faces == nil ? nil : FaceLog(printer: printer, everyFrame: false),
                codes: config.codes == nil ? nil : CodeLog(printer: printer, once: false, stop: {}),
                motion: config.motionArguments == nil ? nil : MotionLog(printer: printer))
            metadata.setMetadataObjectsDelegate(log, queue: DispatchQueue(label: "cvcam.serve.\(config.name).events"))
            if let library = preview?.library {
                let name = config.name
                log.dashboard = { library.record($0, camera: name) }
            }
            if let settings = config.clips {
                clips = try ServeClips(settings: settings, camera: config.name, session: session, input: input, printer: printer)
                log.clips = clips?.trigger
            }
            for output in [metadata, photo] as [CaptureOutput] {
                try session.addOutput(output)
                input.orient(output)
            }
            if let preview {
                // Its own video and photo outputs: the page's rotation and mirroring must not
                // turn the snapshots published on MQTT.
                let video = CaptureVideoDataOutput()
                let photos = CapturePhotoOutput()
                for output in [video, photos] as [CaptureOutput] {
                    try session.addOutput(output)
                    input.orient(output)
                }
                let camera = PreviewCamera(
                    name: config.name, input: deviceInput, video: video, metadata: metadata,
                    photos: photos, streamSettings: preview.stream, forwardsMetadata: true)
                log.preview = camera.observer
                previewCamera = camera
            }
            if let record = config.record {
                recorder = try SegmentRecorder(
                    settings: record, camera: config.name, session: session, printer: printer, input: input, logger: logger)
            }
        } catch {
            return .failed("cannot set up \(config.name): \(Self.message(error))")
        }

        let events = CameraEvents(printer: printer)
        let observation = session.observeEvents(on: events.queue) { [weak self] event in
            events.handle(event)
            switch event {
            case .wasInterrupted:
                self?.setOnline(false)
                self?.reportToPreview("the camera stopped sending frames; waiting for it to come back")
            case .interruptionEnded:
                self?.setOnline(true)
                self?.reportToPreview(nil)
            default: break
            }
        }
        let proceed: Bool = lock.withLock {
            guard !stopping else { return false }
            running = Running(session: session, metadata: metadata, photo: photo, printer: printer, types: types, device: device)
            return true
        }
        guard proceed else { return .stopped }
        defer { lock.withLock { running = nil } }

        let kind = input.inputKind
        printer.emit(
            StartEvent(
                run: RunID.current, clock: printer.clockDescription.json,
                input: .init(kind: kind, name: device.localizedName, size: device.activeFormat.dimensions.description)),
            text: "")
        do { try session.startRunning() } catch {
            observation.cancel()
            return .failed("cannot start \(config.name): \(Self.message(error))")
        }
        recorder?.start()
        if let previewCamera { preview?.directory.attach(previewCamera) }
        setOnline(true)
        let stats = statsInterval.map { interval in
            StatsReporter(interval: interval, printer: printer, latency: latency) {
                .init(frames: session.capturedFrameCount, analysed: metadata.analysedFrameCount, skipped: metadata.skippedFrameCount)
            }
        }
        stats?.start()
        let counting = metrics.map { sink in
            MetricsPump(interval: 1) {
                sink.update(
                    frames: session.capturedFrameCount, analysed: metadata.analysedFrameCount, skipped: metadata.skippedFrameCount)
            }
        }
        session.waitUntilStopped()
        if let previewCamera { preview?.directory.detach(previewCamera) }
        stats?.stop()
        counting?.stop()
        metadata.waitUntilIdle()
        // The last second's frames, which the pump's next tick would not see.
        metrics?.update(frames: session.capturedFrameCount, analysed: metadata.analysedFrameCount, skipped: metadata.skippedFrameCount)
        watcher?.finish()
        clips?.finish()
        recorder?.finish()
        events.queue.sync {}
        observation.cancel()
        setOnline(false)
        preview?.library?.sessionEnded(camera: config.name)
        let stoppedByUs = isStopping
        // The faces of a camera that is gone are not in view any more.
        let hadFaces = lock.withLock {
            defer { facesInView = [] }
            return !facesInView.isEmpty
        }
        if config.faces != nil, hadFaces || stoppedByUs { publishFaces([]) }
        // Nothing moves in front of a camera that is gone (the motion's `end` was published
        // when the session stopped; this covers a broker that missed it).
        let wasMoving = lock.withLock {
            defer { motionActive = false }
            return motionActive
        }
        if config.motionArguments != nil && (wasMoving || stoppedByUs) { publishMotion(false) }
        if stoppedByUs { return .stopped }
        let error = events.stoppingError ?? session.lastRuntimeError
        if let error, error.code != .deviceDisconnected { return .failed(error.message) }
        return input.isFinite ? .ended : .failed("the session stopped")
    }

    private func makeWatcher(_ watch: SnapshotOptions, device: CaptureDevice, input: InputOptions, printer: EventPrinter) throws -> SnapshotWatcher {
        let folder = URL(fileURLWithPath: watch.dir, isDirectory: true)
        try LocalFiles.makeFolder(watch.dir, what: "the snapshot folder")
        guard access(folder.path, W_OK | X_OK) == 0 else {
            throw CLIError.message("cannot write snapshots to \(watch.dir): \(AtomicFile.advice(for: errno, folder: watch.dir))")
        }
        var store = SnapshotStore(
            folder: folder, quality: watch.quality, device: device, rotation: Int32(input.rotate.degrees), mirrored: input.mirror)
        store.namePrefix = config.name
        store.frameClock = device.source.timestampClock
        return SnapshotWatcher(trigger: SnapshotTrigger(configuration: watch.triggerConfiguration), store: store, printer: printer)
    }

    /// The metadata types the camera's config asks for, among those this build has.
    package static func types(_ config: ServeConfig.Camera, available: [MetadataObjectType]) throws -> [MetadataObjectType] {
        var types: [MetadataObjectType] = []
        if config.faces != nil {
            guard available.contains(.face) else { throw CLIError.noFaceModel }
            types.append(.face)
        }
        if let codes = config.codes { types += try codes.types.resolved(available: available) }
        return types
    }

    package static func message(_ error: any Error) -> String {
        let text =
            switch error {
            case let e as CaptureError: e.message
            case let e as CLIError: e.description
            default: "\(error)"
            }
        return Redaction.redact(text)
    }

    // MARK: Publishing

    private func reportToPreview(_ problem: String?) {
        preview?.directory.report(config.name, problem: problem)
    }

    private func setOnline(_ value: Bool) {
        let (changed, cameBack) = lock.withLock {
            defer {
                isOnline = value
                if value { wasOnline = true }
            }
            let cameBack = value && !isOnline && wasOnline
            if cameBack { reconnects += 1 }
            return (isOnline != value, cameBack)
        }
        guard changed else { return }
        if cameBack { metrics?.inputReconnected() }
        metrics?.setOnline(value)
        publisher.publish(
            topic: topics.availability, text: value ? CameraTopics.online : CameraTopics.offline, retain: true, latestOnly: true)
    }

    private func publishEvent<Body: EventBody>(_ body: Body) {
        route(body, EventPrinter.encode(body))
    }

    /// Sends one event to its topic, and keeps the retained state that follows from it.
    private func route(_ body: any EventBody, _ line: String) {
        switch body {
        case is StatsEvent:
            publisher.publish(topic: topics.stats, text: line)
            return
        case let face as FaceEvent:
            // An update means the face is in view too, whatever came before it.
            let state: Set<Int>? = lock.withLock {
                let before = facesInView
                if face.event == "leave" {
                    facesInView.remove(face.face.faceID)
                } else {
                    facesInView.insert(face.face.faceID)
                }
                return before == facesInView ? nil : facesInView
            }
            publisher.publish(topic: topics.events, text: line)
            if let state { publishFaces(state) }
            return
        case let code as CodeEvent where code.event == "appear":
            publisher.publish(topic: topics.events, text: line)
            publisher.publish(topic: topics.code, text: CodeState.line(code, eventLine: line), retain: true, latestOnly: true)
            return
        case let motion as MotionEvent:
            let moving = motion.event == "start"
            lock.withLock { motionActive = moving }
            publisher.publish(topic: topics.events, text: line)
            publishMotion(moving)
            return
        case let snapshot as SnapshotEvent:
            publisher.publish(topic: topics.events, text: line)
            // The file is on disk; its bytes go to the retained topic (a camera entity's image).
            if let data = FileManager.default.contents(atPath: snapshot.path) {
                publisher.publish(topic: topics.snapshot, payload: Array(data), retain: true, latestOnly: true)
            }
            return
        default:
            publisher.publish(topic: topics.events, text: line)
        }
    }

    /// The retained `motion` state.
    private func publishMotion(_ moving: Bool) {
        publisher.publish(
            topic: topics.motion, text: moving ? CameraTopics.motionOn : CameraTopics.motionOff, retain: true, latestOnly: true)
    }

    // MARK: Commands

    /// Carries out a command from the camera's `set` topic: `snapshot`, `detect on|off`,
    /// `roi x,y,w,h` (device space, 0…1) or `roi off`. Anything else, or a command the camera
    /// cannot carry out now, is answered with an `error` event on the `error` topic.
    package func handle(command payload: [UInt8]) {
        let text = String(decoding: payload, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let words = text.split(separator: " ", maxSplits: 1).map(String.init)
        let shown = text.count > 80 ? String(text.prefix(80)) + "…" : text
        let now = CommandRateLimiter.monotonicSeconds()
        let (current, allowed, logRefusals) = lock.withLock { () -> (Running?, Bool, Int) in
            guard commandBucket.allow(now: now) else {
                unloggedRefusals += 1
                guard now - lastRefusalLog >= 1 else { return (running, false, 0) }
                lastRefusalLog = now
                defer { unloggedRefusals = 0 }
                return (running, false, unloggedRefusals)
            }
            return (running, true, 0)
        }
        guard allowed else {
            let limit = config.commandLimit
            let event = ErrorEvent(
                code: "rateLimited",
                message: "'\(shown)': refused, more than \(limit.burst) commands at once or \(limit.perSecond) a second for this camera (commands.burst, commands.perSecond)")
            publisher.publish(topic: topics.error, text: EventPrinter.encode(event))
            metrics?.commandRefused()
            if logRefusals > 0 {
                logger.warning("\(logRefusals) command(s) refused by the rate limit of \(limit.burst) at once, \(limit.perSecond) a second (commands: in the configuration)")
            }
            return
        }
        func refuse(_ why: String) {
            let event = ErrorEvent(code: "badCommand", message: "'\(shown)': \(why)")
            publisher.publish(topic: topics.error, text: EventPrinter.encode(event))
            logger.warning("command refused: \(TerminalText.escaped(event.message))")
        }
        let usage = "commands are snapshot, detect on|off, roi x,y,w,h (0…1) or roi off"
        guard let verb = words.first else { return refuse("empty command; " + usage) }
        switch (verb, words.count > 1 ? words[1] : nil) {
        case ("snapshot", nil):
            guard let current else { return refuse("the camera is offline") }
            guard let watch = config.snapshotOptions else { return refuse("this camera has no snapshots folder (snapshots.dir)") }
            takeSnapshot(current, folder: watch.dir, quality: watch.quality)
        case ("detect", "on"?), ("detect", "off"?):
            guard let current else { return refuse("the camera is offline") }
            let on = words[1] == "on"
            // Off ends the tracks: their `leave` events (with the next frame) empty the faces state;
            // on starts afresh, each face in view with its `enter`.
            do { try current.metadata.setMetadataObjectTypes(on ? current.types : []) } catch { return refuse(error.message) }
            logger.info("detection \(on ? "on" : "off")")
        case ("roi", let argument?):
            guard let current else { return refuse("the camera is offline") }
            if argument == "off" {
                current.metadata.rectOfInterest = CGRect(x: 0, y: 0, width: 1, height: 1)
            } else if let rect = InputOptions.parseRect(argument) {
                current.metadata.rectOfInterest = rect
            } else {
                return refuse("roi needs x,y,w,h: four numbers in 0…1 with w and h above 0, x+w ≤ 1 and y+h ≤ 1")
            }
        default:
            refuse("unknown command; " + usage)
        }
    }

    /// A photo of the next frame (`capturePhoto`), written beside the snapshots and published.
    private func takeSnapshot(_ current: Running, folder: String, quality: Int) {
        let wall = Date()
        let base = "\(config.name)-\(LocalTimestamp(wall).fileNameStamp)-requested"
        // The name is taken now (an empty file), so snapshots asked for in the same millisecond
        // get -2, -3, …; the photo is then written over that empty file.
        let url: URL
        do { url = try RecordingFiles.reserveURL(in: URL(fileURLWithPath: folder), base: base, pathExtension: "jpg") } catch {
            let event = ErrorEvent(code: "snapshotFailed", message: Self.message(error))
            publisher.publish(topic: topics.error, text: EventPrinter.encode(event))
            return
        }
        var settings = CapturePhotoSettings(codec: .jpeg(quality: quality), fileURL: url)
        settings.replacesExistingFile = true
        let delegate = RequestedPhoto(printer: current.printer, path: url.path, wall: wall) { [weak self] message in
            RecordingFiles.releaseReservation(url)
            guard let self else { return }
            publisher.publish(topic: topics.error, text: EventPrinter.encode(ErrorEvent(code: "snapshotFailed", message: message)))
        }
        do { try current.photo.capturePhoto(with: settings, delegate: delegate) } catch {
            RecordingFiles.releaseReservation(url)
            publisher.publish(topic: topics.error, text: EventPrinter.encode(ErrorEvent(error)))
        }
    }
}

/// The `snapshot` command's photo: a `snapshot` event (reason `requested`) once it is on disk,
/// which `ServeCamera.route` publishes with the file's bytes.
///
/// Threading: called on the photo output's delegate queue.
private final class RequestedPhoto: CapturePhotoCaptureDelegate {
    package let printer: EventPrinter
    package let path: String
    package let wall: Date
    package let failed: @Sendable (String) -> Void

    package init(printer: EventPrinter, path: String, wall: Date, failed: @escaping @Sendable (String) -> Void) {
        self.printer = printer
        self.path = path
        self.wall = wall
        self.failed = failed
    }

    package func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?) {
        if let error { return failed("snapshot: \(CaptureError.delegated(error).message)") }
        printer.emit(
            SnapshotEvent(
                path: path, time: eventTime(photo.timestamp), width: photo.resolvedSettings.photoDimensions.width,
                height: photo.resolvedSettings.photoDimensions.height, faceIDs: [], reason: "requested"),
            wall: wall, text: "")
    }
}

/// Hands metadata events to the face log and the code log of one camera.
///
/// Threading: the metadata output's delegate queue (serial), as each log expects.
package final class ServeMetadataLog: CaptureMetadataOutputObjectsDelegate, @unchecked Sendable {
    // @unchecked: the logs are only called on the delegate's serial queue; `preview` is set
    // before the session starts.
    package let faces: FaceLog?
    package let codes: CodeLog?
    package let motion: MotionLog?
    /// The camera's preview page, when the daemon serves one: it gets the same objects and events.
    package var preview: PreviewMetadataObserver?
    /// The camera's event clips, when it records them: faces, codes and motion start and end them.
    package var clips: ClipMetadataTrigger?
    /// The dashboard's record of faces in view and the last code, when the preview has one.
    package var dashboard: (@Sendable ([MetadataEvent]) -> Void)?

    package init(faces: FaceLog?, codes: CodeLog?, motion: MotionLog? = nil) {
        self.faces = faces
        self.codes = codes
        self.motion = motion
    }

    package func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [any MetadataObject], from connection: CaptureConnection
    ) {
        preview?.metadataOutput(output, didOutput: metadataObjects, from: connection)
    }

    package func metadataOutput(_ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection) {
        faces?.metadataOutput(output, didEmit: events, from: connection)
        codes?.metadataOutput(output, didEmit: events, from: connection)
        motion?.metadataOutput(output, didEmit: events, from: connection)
        clips?.handle(events)
        dashboard?(events)
        preview?.metadataOutput(output, didEmit: events, from: connection)
    }
}

/// Calls `body` every `interval` seconds on its own queue until stopped.
package final class MetricsPump: @unchecked Sendable {
    // @unchecked: `timer` is set in init and cancelled in stop.
    private let timer: DispatchSourceTimer
    private let queue = DispatchQueue(label: "cvcam.serve.metrics")

    package init(interval: Double, _ body: @escaping @Sendable () -> Void) {
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler(handler: body)
        timer.resume()
    }

    package func stop() {
        timer.cancel()
        queue.sync {}
    }
}

/// What a camera reports to the metrics (`ServeMetrics`' per-camera handle).
///
/// Threading: thread-safe.
package protocol CameraMetricsSink: Sendable {
    /// Running totals of the current session (they start again from 0 when the camera reopens).
    func update(frames: Int, analysed: Int, skipped: Int)
    /// The time one stage spent on one frame.
    func observeDetection(stage: LatencyRecorder.Stage, milliseconds: Double)
    /// A new session: its running totals start from 0.
    func sessionRestarted()
    /// The input came back (frames flow again) after it was lost.
    func inputReconnected()
    /// The input is being opened again after it failed.
    func inputReconnectAttempted()
    func setOnline(_ online: Bool)
    /// A command on the camera's `set` topic was refused by its rate limit.
    func commandRefused()
}

extension CameraMetricsSink {
    package func commandRefused() {}
}

extension ServeMetrics.Camera: CameraMetricsSink {
    package func observeDetection(stage: LatencyRecorder.Stage, milliseconds: Double) {
        recordDetectionLatency(.nanoseconds(Int64(milliseconds * 1e6)), stage: stage)
    }
    package func inputReconnected() { recordReconnect() }
    package func inputReconnectAttempted() { recordReconnectAttempt() }
    package func commandRefused() { recordCommandRefused() }
}

/// A token bucket for one camera's commands: `burst` tokens, refilled at `perSecond`; a
/// command takes one or is refused.
///
/// A plain value; the camera keeps it under its lock.
package struct CommandRateLimiter: Sendable {
    package let limit: ServeConfig.CommandLimit
    private var tokens: Double
    private var last: Double

    package init(_ limit: ServeConfig.CommandLimit, now: Double) {
        self.limit = limit
        tokens = Double(limit.burst)
        last = now
    }

    /// Takes a token at `now` (seconds on a monotonic clock); false when none is left.
    package mutating func allow(now: Double) -> Bool {
        tokens = min(Double(limit.burst), tokens + max(0, now - last) * limit.perSecond)
        last = max(last, now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// Seconds of CLOCK_MONOTONIC.
    package static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// What a camera needs to show itself in the daemon's preview: the directory its sessions are
/// attached to and how its video is streamed.
///
/// Threading: thread-safe.
package struct ServePreview: Sendable {
    package let directory: PreviewDirectory
    package let stream: MJPEGFanOut.Settings
    /// The dashboard's facts and files, when the preview shows them.
    package let library: PreviewLibrary?

    /// Creates the value from each of its properties.
    package init(directory: PreviewDirectory, stream: MJPEGFanOut.Settings, library: PreviewLibrary? = nil) {
        self.directory = directory
        self.stream = stream
        self.library = library
    }
}
