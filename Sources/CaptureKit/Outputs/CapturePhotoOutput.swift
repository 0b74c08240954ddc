import Dispatch
import Foundation
import Synchronization

/// Receives the stages of one photo capture (`AVCapturePhotoCaptureDelegate`).
///
/// For every `capturePhoto(with:delegate:)` that did not throw, the output calls, in this order
/// and exactly once each unless noted: `willBeginCaptureFor`, `willCapturePhotoFor`,
/// `didCapturePhotoFor`, `didFinishProcessingPhoto` (once per expected photo), and
/// `didFinishCaptureFor` last. A capture that fails (unsupported settings, the session stopping,
/// an encoding or write failure) still gets the whole sequence; the error comes with the photos
/// it concerns and with `didFinishCaptureFor`.
///
/// All calls run on the output's serial delegate queue. Several captures may be in flight;
/// every call names its capture by `resolvedSettings.uniqueID`.
public protocol CapturePhotoCaptureDelegate: AnyObject, Sendable {
    /// The capture was accepted with these resolved settings.
    func photoOutput(_ output: CapturePhotoOutput, willBeginCaptureFor resolvedSettings: CaptureResolvedPhotoSettings)
    /// The first frame for the capture is about to be taken (the shutter moment).
    func photoOutput(_ output: CapturePhotoOutput, willCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings)
    /// Every frame for the capture has been taken.
    func photoOutput(_ output: CapturePhotoOutput, didCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings)
    /// One photo is encoded (and written, when the settings name a file), or failed.
    func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: CaptureError?)
    /// The capture is over; `error` is the first error of the capture, if any.
    func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings,
        error: CaptureError?)
}

extension CapturePhotoCaptureDelegate {
    public func photoOutput(_ output: CapturePhotoOutput, willBeginCaptureFor resolvedSettings: CaptureResolvedPhotoSettings) {}
    public func photoOutput(_ output: CapturePhotoOutput, willCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings) {}
    public func photoOutput(_ output: CapturePhotoOutput, didCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings) {}
    public func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings,
        error: CaptureError?
    ) {}
}

/// A frame source that can change its exposure bias between frames, which bracketed captures
/// need (V4L2 cameras with exposure controls; test doubles).
///
/// Threading: called on the input's capture thread, like `nextFrame`.
public protocol ExposureBracketingSource: FrameSource {
    /// Biases the source accepts, in EV.
    var exposureTargetBiasRange: ClosedRange<Float> { get }
    /// Sets the exposure bias in EV and returns how many frames still come at the old
    /// exposure (frames already in flight in the driver).
    func setExposureTargetBias(_ bias: Float) throws(CaptureError) -> Int
}

/// Takes still photos from a running session (`AVCapturePhotoOutput`).
///
/// A photo is the next frame the session delivers after `capturePhoto`, converted to BGR and
/// encoded off the capture thread. The photo keeps the sensor orientation; JPEG records the
/// connection's rotation and mirroring as EXIF Orientation (PNG applies them to the pixels).
///
/// Resolution: the photo has the active format's size. `maxPhotoDimensions` reports the
/// largest size the device offers; switching a V4L2 camera to it for one shot would mean
/// stopping the stream (VIDIOC_STREAMOFF, S_FMT, buffer reallocation, STREAMON, and a few
/// frames for auto exposure to settle: typically 0.3–1 s without video), so CaptureKit does not
/// switch: choose the format (or preset) for photos before starting the session.
///
/// Threading: thread-safe. Delegate calls run on the output's serial delegate queue.
public final class CapturePhotoOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: mutable state is behind `state` (a Mutex); `converter` is Sendable.

    private struct Request {
        var resolved: CaptureResolvedPhotoSettings
        var settings: CapturePhotoSettings
        var delegate: any CapturePhotoCaptureDelegate
        var nextBracket = 0
        var waitUntilSequence: UInt64?
        var frames: [(SampleBuffer, Float?)] = []
        var captureDate = Date()
        /// Whether `willCapturePhotoFor` has been sent.
        var announced = false
    }
    private struct State {
        var usedIDs = Set<Int64>()
        var pending: [Request] = []
        var input: CaptureDeviceInput?
        var format: CaptureDevice.Format?
        var inFlight = 0
    }
    private let state = Mutex(State())
    private let delegateQueue = DispatchQueue(label: "cvcam.photo-output")
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

    /// The largest frame size the connected device offers (`maxPhotoDimensions`); nil before
    /// the output is in a running session. See the type's note on resolution.
    public var maxPhotoDimensions: CaptureDevice.Dimensions? {
        state.withLock { $0.input }?.device.formats.map(\.dimensions).max { $0.area < $1.area }
    }

    /// Flash modes the device supports: `.off` only on every current device.
    public var supportedFlashModes: [PhotoFlashMode] { [.off] }

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
        let setup = try state.withLock { (s: inout State) throws(CaptureError) -> (CaptureResolvedPhotoSettings, CaptureError?) in
            guard !s.usedIDs.contains(settings.uniqueID) else {
                throw CaptureError(
                    .photoSettingsReused,
                    "photo settings \(settings.uniqueID) were already used; create new CapturePhotoSettings for each capture")
            }
            guard let input = s.input, let format = s.format else {
                throw CaptureError(.sessionNotRunning, "capturePhoto: add the output to a session and start it first")
            }
            s.usedIDs.insert(settings.uniqueID)
            // A smaller maxPhotoDimensions scales the frame down; a larger one gets the active format's size.
            var size = format.dimensions
            if let wanted = settings.maxPhotoDimensions, wanted.width < size.width || wanted.height < size.height {
                size = PhotoEncoder.fitted(size, in: wanted)
            }
            let resolved = CaptureResolvedPhotoSettings(
                uniqueID: settings.uniqueID, photoDimensions: size,
                previewDimensions: settings.previewThumbnailSize.map { PhotoEncoder.fitted(size, in: $0) },
                expectedPhotoCount: settings.expectedPhotoCount, isFlashEnabled: false)
            let problem = Self.unsupported(settings, device: input.device)
            s.inFlight += 1
            let owner = delegate
            delegateQueue.async { [self] in owner.photoOutput(self, willBeginCaptureFor: resolved) }
            if problem == nil {
                s.pending.append(Request(resolved: resolved, settings: settings, delegate: delegate))
            }
            return (resolved, problem)
        }
        if let problem = setup.1 {
            delegateQueue.async { [self] in fail(resolved: setup.0, settings: settings, delegate: delegate, error: problem) }
        }
    }

    /// Why `settings` cannot be carried out on `device`, or nil.
    private static func unsupported(_ settings: CapturePhotoSettings, device: CaptureDevice) -> CaptureError? {
        if settings.flashMode != .off {
            return CaptureError(
                .unsupported, "\(device.localizedName) has no flash; use flashMode .off")
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

    // MARK: Session hooks

    override func sessionWillStart(format: CaptureDevice.Format, input: CaptureDeviceInput) {
        state.withLock {
            $0.input = input
            $0.format = format
        }
    }

    override func receive(_ sample: SampleBuffer, from connection: CaptureConnection, canWait: Bool) {
        // Capture thread: only bookkeeping and (for brackets) one control call; encoding runs
        // on the delegate queue.
        let source = (state.withLock { $0.input }?.device).flatMap(ExposureBiasControl.init(device:))
        var started: [Request] = []
        var completed: [Request] = []
        var failed: [(Request, CaptureError)] = []
        state.withLock { s in
            var keep: [Request] = []
            for var r in s.pending {
                if !r.announced {
                    r.announced = true
                    started.append(r)
                }
                if r.settings.exposureBrackets.isEmpty {
                    r.captureDate = Date()
                    r.frames.append((sample, nil))
                    completed.append(r)
                    continue
                }
                guard let source else { failed.append((r, CaptureError(.unsupported, "the device lost exposure control"))); continue }
                if let wait = r.waitUntilSequence {
                    if sample.sequenceNumber >= wait {
                        if r.frames.isEmpty { r.captureDate = Date() }
                        r.frames.append((sample, r.settings.exposureBrackets[r.nextBracket]))
                        r.nextBracket += 1
                        r.waitUntilSequence = nil
                    }
                }
                if r.nextBracket == r.settings.exposureBrackets.count {
                    _ = try? source.setBias(0)
                    completed.append(r)
                    continue
                }
                if r.waitUntilSequence == nil {
                    do throws(CaptureError) {
                        let late = try source.setBias(r.settings.exposureBrackets[r.nextBracket])
                        r.waitUntilSequence = sample.sequenceNumber + 1 + UInt64(max(0, late))
                    } catch {
                        failed.append((r, error))
                        continue
                    }
                }
                keep.append(r)
            }
            s.pending = keep
        }
        guard !started.isEmpty || !completed.isEmpty || !failed.isEmpty else { return }
        let transform = connection.transform
        let device = state.withLock { $0.input }?.device
        let (started2, completed2, failed2) = (started, completed, failed)
        delegateQueue.async { [self] in
            for r in started2 { r.delegate.photoOutput(self, willCapturePhotoFor: r.resolved) }
            for r in completed2 { finish(r, rotation: transform.rotation, mirrored: transform.mirrored, device: device) }
            for (r, error) in failed2 { finishWithoutFrames(r, error: error) }
        }
    }

    override func sessionDidStop() {
        let orphans = state.withLock { s -> [Request] in
            let p = s.pending
            s.pending = []
            s.input = nil
            s.format = nil
            return p
        }
        guard !orphans.isEmpty else { return }
        let error = CaptureError(.sessionNotRunning, "the session stopped before the photo was taken")
        delegateQueue.async { [self] in
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
                    try AtomicFile.write(encoded, to: target, calls: fileCalls)
                    if case .png = r.settings.codec, let annotation = r.settings.annotation {
                        try AtomicFile.write(
                            Data(annotation.jsonText().utf8), to: target.appendingPathExtension("json"), calls: fileCalls)
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

/// How a photo output biases exposure for brackets: through a source that does it itself
/// (`ExposureBracketingSource`), or through a V4L2 camera's `auto_exposure_bias` control
/// (`CaptureDevice.setExposureTargetBias`, taking the configuration lock for the call).
struct ExposureBiasControl: Sendable {
    /// Biases accepted, in EV.
    let range: ClosedRange<Float>
    /// Sets a bias; returns how many frames still come at the old exposure.
    let setBias: @Sendable (Float) throws(CaptureError) -> Int

    /// The device's way of biasing exposure, or nil when it has none.
    init?(device: CaptureDevice) {
        if let source = device.source as? any ExposureBracketingSource {
            range = source.exposureTargetBiasRange
            setBias = { bias throws(CaptureError) in try source.setExposureTargetBias(bias) }
            return
        }
        guard device.deviceType == .external, device.isControlSupported(.autoExposureBias),
            let low = try? device.minExposureTargetBias, let high = try? device.maxExposureTargetBias, low < high
        else { return nil }
        range = low...high
        setBias = { bias throws(CaptureError) in
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            try device.setExposureTargetBias(bias)
            // Frames already queued in the driver's buffers were exposed before the change.
            return Int(V4L2FrameSource.bufferCount)
        }
    }
}
