import Dispatch
import Foundation
import Synchronization

/// Takes still photos from a running session (`AVCapturePhotoOutput`).
///
/// A photo is the next frame the session delivers after `capturePhoto`, converted to BGR and
/// encoded off the capture thread. The photo keeps the sensor orientation; JPEG records the
/// connection's rotation and mirroring as EXIF Orientation (PNG applies them to the pixels).
///
/// Resolution, as in AVFoundation: `maxPhotoDimensions` is the largest size the device offers;
/// settings without `maxPhotoDimensions` get the active format's size (no switch, so a
/// plain `cvcam snap` stays fast). Settings asking for less get the frame scaled down. Settings
/// asking for more, on a live camera (V4L2) that offers a larger frame size, get the largest
/// offered size not exceeding the request: the session's capture thread switches the camera to
/// that size for the shot (`VIDIOC_STREAMOFF`, `S_FMT`, buffers reallocated, `STREAMON`; the
/// fastest format of that size, ties going to the active pixel format), skips
/// `formatSwitchSettleFrameCount` frames while auto exposure settles, takes one frame and
/// switches back. Meanwhile no video is streamed: video data and metadata outputs see the gap
/// as frames the source skipped (`discontinuity` drops) and then frames in the old format.
/// Files and synthetic sources keep their one size.
///
/// A switch costs two stream restarts, the settle frames and the shot, and the video has a gap
/// as long (about 0.2 s on the emulated camera, 0.3–1 s on UVC cameras; figures in
/// `Tools/Bench/README.md`).
///
/// Flash: `supportedFlashModes` is `[.off, .on]` when the V4L2 camera has a flash
/// (`flash_led_mode` with a "Flash" entry), `[.off]` otherwise. `.auto` is never offered:
/// V4L2 has no control that says the scene is dark. With `.on`, the output sets the LED mode to
/// flash, presses `flash_strobe` when the camera has it, takes the first frame whose exposure
/// started after that (the driver's `CLOCK_MONOTONIC` timestamp), and puts the previous LED
/// mode back, also when the capture fails or the session stops. Flash cannot be combined with
/// exposure brackets.
///
/// Threading: thread-safe. Delegate calls run on the output's serial delegate queue.
public final class CapturePhotoOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: mutable state is behind `state` (a Mutex); `converter` is Sendable.

    /// What delivery needs of a pending capture; which frames it takes is `State.machine`'s call.
    private struct Request {
        var resolved: CaptureResolvedPhotoSettings
        var settings: CapturePhotoSettings
        var delegate: any CapturePhotoCaptureDelegate
        var frames: [(SampleBuffer, Float?)] = []
        var captureDate = Date()
        /// Whether `willCapturePhotoFor` has been sent.
        var announced = false
    }
    /// A flash fired for pending captures: the LED mode to put back.
    private struct FlashShot {
        var control: FlashControl
        var previousMode: Int64
    }
    private struct State {
        var usedIDs = Set<Int64>()
        /// Pending captures by `uniqueID`; `machine` holds their order and frame decisions.
        var requests: [Int64: Request] = [:]
        var machine = PhotoCaptureMachine(settleFrameCount: CapturePhotoOutput.formatSwitchSettleFrameCount)
        var input: CaptureDeviceInput?
        var format: CaptureDevice.Format?
        var inFlight = 0
        var flash: FlashShot?
    }
    private let state = Mutex(State())
    private let delegateQueue = DispatchQueue(label: "cvcam.photo-output")
    /// The thread running a `delegateQueue` job right now (encoding and the delegate's calls).
    private let delegateThread = Mutex<pthread_t?>(nil)
    private let converter = FrameConverter()
    /// File system calls for writing photos (a seam for tests).
    let fileCalls: any FileSystemCalls

    /// Creates a photo output.
    public override init() {
        fileCalls = SystemFileCalls()
        super.init()
    }

    init(fileCalls: any FileSystemCalls) {
        self.fileCalls = fileCalls
        super.init()
    }

    /// Frames thrown away after switching a camera to a still format, while its auto exposure
    /// and white balance settle on the new stream (UVC cameras restart both at `STREAMON`).
    /// At 30 fps this is about 0.13 s.
    public static let formatSwitchSettleFrameCount = 4

    /// Frames a flash capture waits at most for one exposed after the strobe, for drivers whose
    /// timestamps are not on `CLOCK_MONOTONIC` (the frames in flight, plus one).
    static func flashFramesInFlight(_ device: CaptureDevice?) -> Int {
        (device?.source.capabilities?.framesInFlight ?? 1) + 1
    }

    /// The largest frame size the connected device offers (`maxPhotoDimensions`); nil before
    /// the output is in a running session. Ask for it in `CapturePhotoSettings` to get it; see
    /// the type's note on resolution.
    public var maxPhotoDimensions: CaptureDevice.Dimensions? {
        state.withLock { $0.input }?.device.formats.map(\.dimensions).max { $0.area < $1.area }
    }

    /// Flash modes the device supports (`supportedFlashModes`): `[.off, .on]` for a V4L2
    /// camera with a flash (`CaptureDevice.hasFlash`), `[.off]` otherwise; never `.auto`.
    public var supportedFlashModes: [PhotoFlashMode] {
        guard let device = state.withLock({ $0.input })?.device, FlashControl(device: device) != nil else { return [.off] }
        return [.off, .on]
    }

    /// How many photos one bracketed capture may take: 3 when the source can bias exposure
    /// (an `ExposureBracketingSource`, or a V4L2 camera with `auto_exposure_bias`), 0 otherwise
    /// (`maxBracketedCapturePhotoCount`).
    public var maxBracketedCapturePhotoCount: Int {
        (state.withLock { $0.input }?.device).flatMap(ExposureBiasControl.init(device:)) != nil ? 3 : 0
    }

    /// Captures accepted and not yet finished.
    public var inFlightCaptureCount: Int { state.withLock { $0.inFlight } }

    /// Starts a capture (`capturePhoto(with:delegate:)`); the delegate is retained until
    /// `didFinishCaptureFor`.
    ///
    /// - Throws: `.photoSettingsReused` when `settings` were already used, `.sessionNotRunning`
    ///   when no session is streaming to this output. Everything else (unsupported flash or
    ///   brackets, encoding or write failures, the session stopping) arrives through the
    ///   delegate with the full lifecycle.
    public func capturePhoto(with settings: CapturePhotoSettings, delegate: any CapturePhotoCaptureDelegate) throws(CaptureError) {
        let reused = CaptureError(
            .photoSettingsReused,
            "photo settings \(settings.uniqueID) were already used; create new CapturePhotoSettings for each capture")
        let current = try state.withLock { (s: inout State) throws(CaptureError) -> (CaptureDeviceInput, CaptureDevice.Format) in
            guard !s.usedIDs.contains(settings.uniqueID) else { throw reused }
            guard let input = s.input, let format = s.format else {
                throw CaptureError(.sessionNotRunning, "capturePhoto: add the output to a session and start it first")
            }
            return (input, format)
        }
        // Control queries (ioctls) run outside the lock.
        let (input, format) = current
        var size = format.dimensions
        var still: CaptureDevice.Format?
        if let wanted = settings.maxPhotoDimensions {
            if wanted.width < size.width || wanted.height < size.height {
                size = PhotoEncoder.fitted(size, in: wanted)
            } else if let larger = Self.stillFormat(fitting: wanted, active: format, device: input.device) {
                still = larger
                size = larger.dimensions
            }
        }
        let problem = Self.unsupported(settings, device: input.device)
        let resolved = CaptureResolvedPhotoSettings(
            uniqueID: settings.uniqueID, photoDimensions: size,
            previewDimensions: settings.previewThumbnailSize.map { PhotoEncoder.fitted(size, in: $0) },
            expectedPhotoCount: settings.expectedPhotoCount, isFlashEnabled: problem == nil && settings.flashMode == .on)
        try state.withLock { (s: inout State) throws(CaptureError) in
            guard !s.usedIDs.contains(settings.uniqueID) else { throw reused }
            s.usedIDs.insert(settings.uniqueID)
            s.inFlight += 1
            let owner = delegate
            onDelegateQueue { [self] in owner.photoOutput(self, willBeginCaptureFor: resolved) }
            if problem == nil {
                s.requests[settings.uniqueID] = Request(resolved: resolved, settings: settings, delegate: delegate)
                s.machine.add(
                    .init(
                        id: settings.uniqueID, stillFormat: still, brackets: settings.exposureBrackets,
                        wantsFlash: resolved.isFlashEnabled))
            }
        }
        if let problem {
            onDelegateQueue { [self] in fail(resolved: resolved, settings: settings, delegate: delegate, error: problem) }
        }
    }

    /// Takes a photo of `frame`, a frame this output's session already delivered (the one faces
    /// or codes were found in, say), so what `settings.annotation` says about that frame is true
    /// of the photo's pixels. Nothing is captured anew, only encoded (and written): settings that
    /// need a new exposure (flash, exposure brackets, a size larger than the frame) fail through
    /// the delegate with `.unsupported`. The delegate sees the whole lifecycle, as for
    /// `capturePhoto(with:delegate:)`; the photo's EXIF date is the frame's wall time.
    ///
    /// - Throws: `.photoSettingsReused` when `settings` were already used.
    public func capturePhoto(
        of frame: SampleBuffer, with settings: CapturePhotoSettings, delegate: any CapturePhotoCaptureDelegate
    ) throws(CaptureError) {
        var size = CaptureDevice.Dimensions(width: frame.width, height: frame.height)
        var problem: CaptureError?
        if settings.flashMode != .off {
            problem = CaptureError(.unsupported, "a photo of a delivered frame cannot use the flash; use flashMode .off")
        } else if !settings.exposureBrackets.isEmpty {
            problem = CaptureError(.unsupported, "a photo of a delivered frame cannot take exposure brackets; take a single photo")
        }
        if let wanted = settings.maxPhotoDimensions {
            if wanted.width < size.width || wanted.height < size.height {
                size = PhotoEncoder.fitted(size, in: wanted)
            } else if problem == nil, wanted != size, let device = state.withLock({ $0.input?.device }),
                Self.stillFormat(fitting: wanted, active: device.activeFormat, device: device) != nil
            {
                problem = CaptureError(
                    .unsupported,
                    "a photo of a delivered frame is at most the frame's size \(size); leave maxPhotoDimensions at or below it")
            }
        }
        let resolved = CaptureResolvedPhotoSettings(
            uniqueID: settings.uniqueID, photoDimensions: size,
            previewDimensions: settings.previewThumbnailSize.map { PhotoEncoder.fitted(size, in: $0) },
            expectedPhotoCount: 1, isFlashEnabled: false)
        let device = try state.withLock { (s: inout State) throws(CaptureError) -> CaptureDevice? in
            guard !s.usedIDs.contains(settings.uniqueID) else {
                throw CaptureError(
                    .photoSettingsReused,
                    "photo settings \(settings.uniqueID) were already used; create new CapturePhotoSettings for each capture")
            }
            s.usedIDs.insert(settings.uniqueID)
            s.inFlight += 1
            return s.input?.device
        }
        let transform = connections.first?.transform ?? (rotation: 0, mirrored: false)
        let wallTime = WallClock.shared.date(for: frame.presentationTimeStamp, on: device?.source.timestampClock ?? .media)
        onDelegateQueue { [self, problem] in
            delegate.photoOutput(self, willBeginCaptureFor: resolved)
            if let problem {
                fail(resolved: resolved, settings: settings, delegate: delegate, error: problem)
                return
            }
            delegate.photoOutput(self, willCapturePhotoFor: resolved)
            let request = Request(
                resolved: resolved, settings: settings, delegate: delegate, frames: [(frame, nil)], captureDate: wallTime,
                announced: true)
            finish(request, rotation: transform.rotation, mirrored: transform.mirrored, device: device)
        }
    }

    /// The format a photo of at most `wanted` switches a live camera to: the largest frame size
    /// the device offers within `wanted` that is larger than the active one; of its formats the
    /// fastest (the shortest time without video), ties going to the active pixel format. Nil
    /// when there is none, or the source is not live (files and synthetic scenes have one size).
    static func stillFormat(
        fitting wanted: CaptureDevice.Dimensions, active: CaptureDevice.Format, device: CaptureDevice
    ) -> CaptureDevice.Format? {
        guard device.source.isLive else { return nil }
        let larger = device.formats.filter {
            $0.dimensions.width <= wanted.width && $0.dimensions.height <= wanted.height
                && $0.dimensions.area > active.dimensions.area
        }
        guard let area = larger.map(\.dimensions.area).max() else { return nil }
        let slowest = MediaTime(value: 3600, timescale: 1)
        return larger.filter { $0.dimensions.area == area }.min { a, b in
            let (da, db) = (a.minFrameDuration ?? slowest, b.minFrameDuration ?? slowest)
            if da != db { return da < db }
            return a.mediaSubType == active.mediaSubType && b.mediaSubType != active.mediaSubType
        }
    }

    /// Why `settings` cannot be carried out on `device`, or nil.
    private static func unsupported(_ settings: CapturePhotoSettings, device: CaptureDevice) -> CaptureError? {
        if settings.flashMode != .off {
            guard FlashControl(device: device) != nil else {
                return CaptureError(.unsupported, "\(device.localizedName) has no flash; use flashMode .off")
            }
            if settings.flashMode == .auto {
                return CaptureError(
                    .unsupported,
                    "\(device.localizedName) cannot tell when the scene is dark (V4L2 has no such control), so flash .auto is not offered; use .on or .off")
            }
            if !settings.exposureBrackets.isEmpty {
                return CaptureError(.unsupported, "flash cannot be combined with exposure brackets; use flashMode .off for brackets")
            }
        }
        if !settings.exposureBrackets.isEmpty {
            guard let source = ExposureBiasControl(device: device) else {
                return CaptureError(
                    .unsupported,
                    "\(device.localizedName) cannot bias its exposure, so it cannot take exposure brackets; take a single photo")
            }
            if settings.exposureBrackets.count > 3 {
                return CaptureError(.unsupported, "at most 3 exposure brackets per capture, asked for \(settings.exposureBrackets.count)")
            }
            if let bad = settings.exposureBrackets.first(where: { !source.range.contains($0) }) {
                return CaptureError(
                    .valueOutOfRange,
                    "exposure bias \(bad) EV is outside \(device.localizedName)'s range \(source.range)")
            }
        }
        return nil
    }

    /// The rest of the lifecycle for a capture that failed before a frame was taken. Delegate queue.
    private func fail(
        resolved: CaptureResolvedPhotoSettings, settings: CapturePhotoSettings, delegate: any CapturePhotoCaptureDelegate,
        error: CaptureError
    ) {
        delegate.photoOutput(self, willCapturePhotoFor: resolved)
        delegate.photoOutput(self, didCapturePhotoFor: resolved)
        for i in 0..<resolved.expectedPhotoCount {
            let photo = CapturePhoto(
                resolvedSettings: resolved, photoCount: i + 1, timestamp: .zero,
                exposureTargetBias: settings.exposureBrackets.isEmpty ? nil : settings.exposureBrackets[i],
                pixelBuffer: nil, previewPixelBuffer: nil, annotation: settings.annotation, fileURL: nil, encoded: nil)
            delegate.photoOutput(self, didFinishProcessingPhoto: photo, error: error)
        }
        state.withLock { $0.inFlight -= 1 }
        delegate.photoOutput(self, didFinishCaptureFor: resolved, error: error)
    }

    /// Runs `body` on the delegate queue, where photos are encoded and written and the delegate
    /// is called, marking the thread so `waitForWorkInProgress` can tell a call from there.
    private func onDelegateQueue(_ body: @escaping @Sendable () -> Void) {
        delegateQueue.async { [self] in
            delegateThread.withLock { $0 = pthread_self() }
            body()
            delegateThread.withLock { $0 = nil }
        }
    }

    /// Photos being encoded and written; from a delegate callback (on that queue) at once.
    override func waitForWorkInProgress() {
        if delegateThread.withLock({ $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }) { return }
        delegateQueue.sync {}
    }

    // MARK: Session hooks

    override func sessionWillStart(format: CaptureDevice.Format, input: CaptureDeviceInput) {
        state.withLock {
            $0.input = input
            $0.format = format
        }
    }

    override func receive(_ sample: SampleBuffer, from connection: CaptureConnection, canWait: Bool) {
        process(sample, connection: connection, still: nil)
    }

    override func requestedStillFormat() -> CaptureDevice.Format? {
        state.withLock { $0.machine.requestedStillFormat }
    }

    override func receiveStill(_ sample: SampleBuffer, format: CaptureDevice.Format, from connection: CaptureConnection) -> Bool {
        if state.withLock({ $0.machine.stillFrameArrived() }) { process(sample, connection: connection, still: format) }
        return state.withLock { $0.machine.isStillFormatDone(format) }
    }

    override func stillFormatFailed(_ format: CaptureDevice.Format, error: CaptureError) {
        let failed = state.withLock { s -> [Request] in
            s.machine.removeAll(stillFormat: format).compactMap { s.requests.removeValue(forKey: $0) }
        }
        restoreFlash(force: false)
        guard !failed.isEmpty else { return }
        let wrapped = CaptureError(error.code, "the photo at \(format.dimensions) failed: \(error.message)")
        onDelegateQueue { [self] in
            for r in failed {
                if !r.announced { r.delegate.photoOutput(self, willCapturePhotoFor: r.resolved) }
                finishWithoutFrames(r, error: wrapped)
            }
        }
    }

    /// Gives `sample` to the pending captures waiting for frames of its kind (`still` nil: the
    /// active format; otherwise that still format): the machine decides, this carries out its
    /// actions. Capture thread: only bookkeeping and a few control calls (exposure bias for
    /// brackets, the flash); encoding runs on the delegate queue.
    private func process(_ sample: SampleBuffer, connection: CaptureConnection, still: CaptureDevice.Format?) {
        let (device, needs) = state.withLock { s in (s.input?.device, s.machine.needs(stillFormat: still)) }
        // Control lookups are ioctls: outside the lock, and only when a capture needs them.
        let bias = needs.bias ? device.flatMap(ExposureBiasControl.init(device:)) : nil
        let flash = needs.flash ? device.flatMap(FlashControl.init(device:)) : nil
        let frame = PhotoCaptureMachine.Frame(
            time: sample.presentationTimeStamp, sequence: sample.sequenceNumber, stillFormat: still)
        var started: [Request] = []
        var completed: [Request] = []
        var failed: [(Request, CaptureError)] = []
        state.withLock { s in
            var actions = ArraySlice(
                s.machine.step(
                    frame, canSetBias: bias != nil, canFireFlash: needs.flash ? flash != nil : nil,
                    flashFrameLimit: Self.flashFramesInFlight(device)))
            while let action = actions.popFirst() {
                switch action {
                case .fireFlash:
                    // The machine asks only when `canFireFlash` was true.
                    guard let flash else { continue }
                    do throws(CaptureError) {
                        s.flash = FlashShot(control: flash, previousMode: try flash.fire())
                        s.machine.flashFired(at: .monotonicNow())
                    } catch {
                        actions += s.machine.flashFailed(error, stillFormat: still)
                    }
                case .setBias(let value, let id):
                    // The machine asks only when `canSetBias` was true.
                    guard let bias else { continue }
                    do throws(CaptureError) {
                        s.machine.biasSet(for: id, lateFrames: try bias.setBias(value))
                    } catch {
                        actions += s.machine.biasFailed(for: id, error)
                    }
                case .resetBias:
                    _ = try? bias?.setBias(0)
                case .announce(let id):
                    s.requests[id]?.announced = true
                    if let r = s.requests[id] { started.append(r) }
                case .take(let id, let bias):
                    if s.requests[id]?.frames.isEmpty == true { s.requests[id]?.captureDate = Date() }
                    s.requests[id]?.frames.append((sample, bias))
                case .complete(let id):
                    if let r = s.requests.removeValue(forKey: id) { completed.append(r) }
                case .fail(let id, let error):
                    if let r = s.requests.removeValue(forKey: id) { failed.append((r, error)) }
                }
            }
        }
        restoreFlash(force: false)
        guard !started.isEmpty || !completed.isEmpty || !failed.isEmpty else { return }
        let transform = connection.transform
        let (started2, completed2, failed2) = (started, completed, failed)
        onDelegateQueue { [self] in
            for r in started2 { r.delegate.photoOutput(self, willCapturePhotoFor: r.resolved) }
            for r in completed2 { finish(r, rotation: transform.rotation, mirrored: transform.mirrored, device: device) }
            for (r, error) in failed2 {
                if !r.announced { r.delegate.photoOutput(self, willCapturePhotoFor: r.resolved) }
                finishWithoutFrames(r, error: error)
            }
        }
    }

    /// Puts the LED mode from before the flash back once no pending capture wants the flash
    /// (or always, with `force`: the session stopped).
    private func restoreFlash(force: Bool) {
        let shot = state.withLock { s -> FlashShot? in
            guard s.machine.releaseFlash(force: force) else { return nil }
            defer { s.flash = nil }
            return s.flash
        }
        // A camera that refuses now also refused the flash; nothing better to do than leave it.
        if let shot { try? shot.control.restore(shot.previousMode) }
    }

    override func sessionDidStop() {
        let orphans = state.withLock { s -> [Request] in
            let orphans = s.machine.removeAll().compactMap { s.requests.removeValue(forKey: $0) }
            s.input = nil
            s.format = nil
            return orphans
        }
        restoreFlash(force: true)
        guard !orphans.isEmpty else { return }
        let error = CaptureError(.sessionNotRunning, "the session stopped before the photo was taken")
        onDelegateQueue { [self] in
            for r in orphans {
                if !r.announced { r.delegate.photoOutput(self, willCapturePhotoFor: r.resolved) }
                finishWithoutFrames(r, error: error)
            }
        }
    }

    /// Ends a capture whose frames could not all be taken. Delegate queue; willCapture already sent.
    private func finishWithoutFrames(_ r: Request, error: CaptureError) {
        r.delegate.photoOutput(self, didCapturePhotoFor: r.resolved)
        for i in 0..<r.resolved.expectedPhotoCount {
            let photo = CapturePhoto(
                resolvedSettings: r.resolved, photoCount: i + 1, timestamp: .zero,
                exposureTargetBias: r.settings.exposureBrackets.isEmpty ? nil : r.settings.exposureBrackets[i],
                pixelBuffer: nil, previewPixelBuffer: nil, annotation: r.settings.annotation, fileURL: nil, encoded: nil)
            r.delegate.photoOutput(self, didFinishProcessingPhoto: photo, error: error)
        }
        state.withLock { $0.inFlight -= 1 }
        r.delegate.photoOutput(self, didFinishCaptureFor: r.resolved, error: error)
    }

    /// Encodes, writes and delivers every photo of a complete capture. Delegate queue.
    private func finish(_ r: Request, rotation: Int32, mirrored: Bool, device: CaptureDevice?) {
        r.delegate.photoOutput(self, didCapturePhotoFor: r.resolved)
        var firstError: CaptureError?
        for (i, (sample, bias)) in r.frames.enumerated() {
            var error: CaptureError?
            var bgr: PixelBuffer?
            var preview: PixelBuffer?
            var data: Data?
            var written: URL?
            do throws(CaptureError) {
                var frame = try converter.convert(sample, to: .bgr, rotation: 0, mirrored: false).pixelBuffer
                if frame.width != r.resolved.photoDimensions.width || frame.height != r.resolved.photoDimensions.height {
                    frame = try PhotoEncoder.thumbnail(of: frame, fitting: r.resolved.photoDimensions)
                }
                bgr = frame
                if let size = r.settings.previewThumbnailSize { preview = try PhotoEncoder.thumbnail(of: frame, fitting: size) }
                let encoded = try PhotoEncoder.encode(
                    frame, codec: r.settings.codec, rotation: rotation, mirrored: mirrored, device: device,
                    captureDate: r.captureDate, annotation: r.settings.annotation, converter: converter)
                data = encoded
                if let url = r.settings.fileURL {
                    let target = r.frames.count > 1 ? Self.bracketURL(url, index: i + 1) : url
                    let replacing = r.settings.replacesExistingFile
                    try AtomicFile.write(encoded, to: target, replacing: replacing, calls: fileCalls)
                    if case .png = r.settings.codec, let annotation = r.settings.annotation {
                        try AtomicFile.write(
                            Data(annotation.jsonText().utf8), to: target.appendingPathExtension("json"), replacing: replacing,
                            calls: fileCalls)
                    }
                    written = target
                }
            } catch let e {
                error = e
                firstError = firstError ?? e
            }
            let photo = CapturePhoto(
                resolvedSettings: r.resolved, photoCount: i + 1, timestamp: sample.presentationTimeStamp,
                exposureTargetBias: bias, pixelBuffer: bgr, previewPixelBuffer: preview, annotation: r.settings.annotation,
                fileURL: written, encoded: data)
            r.delegate.photoOutput(self, didFinishProcessingPhoto: photo, error: error)
        }
        state.withLock { $0.inFlight -= 1 }
        r.delegate.photoOutput(self, didFinishCaptureFor: r.resolved, error: firstError)
    }

    /// "name-2.jpg" for the second photo of a bracket written to "name.jpg".
    static func bracketURL(_ url: URL, index: Int) -> URL {
        let ext = url.pathExtension
        let base = url.deletingPathExtension()
        return base.deletingLastPathComponent().appendingPathComponent("\(base.lastPathComponent)-\(index)")
            .appendingPathExtension(ext)
    }
}

extension MediaTime {
    /// Now on `CLOCK_MONOTONIC`, the clock of V4L2 buffer timestamps, in microseconds.
    fileprivate static func monotonicNow() -> MediaTime {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return MediaTime(value: Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000, timescale: 1_000_000)
    }
}
