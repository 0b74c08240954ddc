import ArgumentParser
import CaptureJobs
import CaptureKit
import Foundation

/// `cvcam snap`: one photo (or a series) of the input, through `CapturePhotoOutput`.
struct Snap: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Take a photo (JPEG with EXIF, or PNG) of the input, now or when a face appears.",
        discussion: """
            The photo is the frame the input delivers right after the shutter is pressed (like \
            AVCapturePhotoOutput) at the first frame; with --wait-for-face it is the first \
            analysed frame with a face itself, stored with exactly the faces found in it (for a \
            file: the same frame on every run; no --flash, and --photo-size only to shrink). \
            With --count N, FILE gets -1, -2, … before its extension \
            and the shutter is pressed every --interval seconds of frame time. A single image as input \
            is repeated so it can be photographed. Each photo written prints a `snapshot` event \
            (path, time, width, height, faceIDs). Files are written atomically. JPEG photos carry \
            the faces as JSON in EXIF UserComment; PNG photos get a .json sidecar.

            Exit codes: 0 every photo was written; 1 runtime error, or the input ended or \
            --timeout passed before \
            every photo was taken; 4 nothing found (--wait-for-face and no face before the input \
            ended or --timeout passed); 64 usage error.
            """)

    @OptionGroup var input: InputOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var faceOptions: FaceOptions

    @Option(name: [.customShort("o"), .long], help: ArgumentHelp("The photo's file: .jpg/.jpeg (JPEG with EXIF) or .png.", valueName: "file"), completion: .file(), transform: InputOptions.argumentBytes)
    var outputFile: String

    @Flag(help: "Take the photo when a face is first seen.")
    var waitForFace = false

    @Option(help: "Give up after this many seconds (wall clock).")
    var timeout: Double?

    @Option(help: "How many photos to take.")
    var count: Int = 1

    @Option(help: "Seconds of frame time between photos when --count is above 1.")
    var interval: Double = 1

    @Option(help: "JPEG quality, 1…100.")
    var quality: Int = 90

    @Option(help: ArgumentHelp(
        "Largest photo size: 'max' for the largest the camera offers, or WxH. A V4L2 camera streaming a smaller format switches to it for the shot and back (a fraction of a second without video). Default: the capture size.",
        valueName: "max|WxH"), completion: .list(["max"]))
    var photoSize: String?

    @Flag(help: "Replace photos that exist (otherwise an existing file is refused before anything runs).")
    var overwrite = false

    @Flag(help: "Fire the camera's flash for each photo (V4L2 cameras with a flash LED control).")
    var flash = false

    static let extensions = ["jpg", "jpeg", "png"]

    func validate() throws {
        try input.requireSingleInput("snap")
        let ext = (outputFile as NSString).pathExtension.lowercased()
        guard Self.extensions.contains(ext) else {
            throw ValidationError("-o must end in .jpg, .jpeg or .png (got '\(outputFile)').")
        }
        try OptionRange.check(count, 1...10_000, "--count")
        try OptionRange.check(interval, OptionRange.seconds, "--interval", unit: " seconds")
        try OptionRange.check(timeout, OptionRange.positiveSeconds, "--timeout", unit: " seconds")
        try OptionRange.check(quality, 1...100, "--quality")
        if let photoSize, photoSize.lowercased() != "max", InputOptions.parseSize(photoSize) == nil {
            throw ValidationError("--photo-size must be 'max' or WxH, e.g. 1920x1080, each side 1 to 16384 (got '\(photoSize)').")
        }
        // The photo is the frame the faces were found in: no new exposure can be taken for it.
        if waitForFace && flash {
            throw ValidationError("--wait-for-face photographs the frame the face was found in, so it cannot fire the flash; drop --flash or --wait-for-face.")
        }
        if waitForFace, photoSize?.lowercased() == "max" {
            throw ValidationError("--wait-for-face photographs the frame the face was found in, so --photo-size can only make it smaller; give WxH or drop --photo-size.")
        }
    }

    /// The files the photos go to: FILE, or FILE-1, FILE-2, … before the extension.
    static func fileURLs(for path: String, count: Int) -> [URL] {
        let url = URL(fileURLWithPath: path)
        guard count > 1 else { return [url] }
        let base = url.deletingPathExtension()
        return (1...count).map { i in
            base.deletingLastPathComponent().appendingPathComponent("\(base.lastPathComponent)-\(i)")
                .appendingPathExtension(url.pathExtension)
        }
    }

    func run() throws {
        let urls = Self.fileURLs(for: outputFile, count: count)
        // Refused up front; the write itself also never replaces without --overwrite (link(2)).
        if !overwrite, let existing = urls.first(where: { url in FilePathBytes.withCString(url.path) { access($0, F_OK) } == 0 }) {
            throw CLIError.message("\(existing.path) exists; choose another name or pass --overwrite.")
        }
        // A single image ends after one frame, before a shutter could be pressed: repeat it.
        var device: CaptureDevice?
        if input.inputKind == "image", let path = input.input {
            device = try CaptureDevice(imagesAtPath: path, frameRate: input.fps ?? 10, loops: true, pacing: input.framePacing)
        }
        let job = try CaptureJob(input: input, output: output, device: device)
        if flash && !job.device.hasFlash {
            throw CLIError.message(
                "--flash: \(job.device.localizedName) has no flash (no V4L2 flash LED control); take the photo without --flash.")
        }
        let photos = CapturePhotoOutput()
        try job.add(photos)
        let codec: PhotoCodec = (outputFile as NSString).pathExtension.lowercased() == "png" ? .png : .jpeg(quality: quality)
        // 'max' is read when the shutter is pressed: the output knows its device once running.
        let photoDimensions: @Sendable () -> CaptureDevice.Dimensions?
        if let photoSize, photoSize.lowercased() == "max" {
            photoDimensions = { photos.maxPhotoDimensions }
        } else {
            let size = photoSize.flatMap(InputOptions.parseSize)
            photoDimensions = { size }
        }
        let shutter = Shutter(
            photoOutput: photos, urls: urls, codec: codec, interval: interval,
            waitForFace: waitForFace, printer: job.printer,
            photoDimensions: photoDimensions,
            flashMode: flash ? .on : .off, overwrite: overwrite
        ) { [job] in
            DispatchQueue.global().async { try? job.session.stopRunning() }
        }
        // Frame times drive the shutter; a file waits for it (one queued frame) so it cannot run ahead.
        let clock = CaptureVideoDataOutput(maximumQueuedFrames: 1)
        clock.videoPixelFormat = nil
        clock.alwaysDiscardsLateVideoFrames = !input.isFinite
        clock.setSampleBufferDelegate(shutter, queue: DispatchQueue(label: "cvcam.snap.clock"))
        try job.add(clock)
        var metadata: CaptureMetadataOutput?
        if waitForFace {
            // Every analysed frame with exactly its faces (see FaceObservingStage): the photo is
            // taken of that frame, so its stored boxes are the boxes in its pixels.
            let faces = try faceOptions.faceOutput(for: input) { frame, found in shutter.observe(frame, faces: found) }
            try job.add(faces)
            metadata = faces
        }
        if let timeout {
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [job] in
                shutter.timeOut()
                try? job.session.stopRunning()
            }
        }
        try job.run { [job] in
            String(format: "%.0f s  photos %d of %d", job.elapsed, shutter.written, shutter.urls.count)
                + (shutter.armed ? "" : "  waiting for a face")
        }
        metadata?.waitUntilIdle()
        shutter.waitUntilFinished()
        job.reportRuntimeError()
        let outcome = shutter.outcome
        if !output.quiet || output.json {
            var summary = job.summary(processed: clock.deliveredFrameCount, skipped: clock.droppedFrameCount)
            summary.photos = outcome.written
            job.printer.emit(
                summary,
                text: "summary: \(job.session.capturedFrameCount) frames, \(outcome.written) of \(count) photos written\(job.formatSummary)")
        }
        if job.runtimeError != nil || outcome.failed > 0 { throw ExitCode(ExitStatus.runtimeError) }
        if waitForFace && !outcome.faceSeen {
            if !output.quiet { TerminalText.printError("cvcam: no face was seen; no photo taken.") }
            throw ExitCode(ExitStatus.nothingFound)
        }
        if outcome.written < count && !job.interrupted {
            TerminalText.printError(
                "cvcam: only \(outcome.written) of \(count) photos were taken before the input ended or --timeout passed.")
            throw ExitCode(ExitStatus.runtimeError)
        }
    }
}

/// Presses `CapturePhotoOutput`'s shutter at the right frames and reports each photo.
///
/// Frames (from a video data output, for their times) arrive on its serial queue, analysed
/// frames with their faces (--wait-for-face) on the face thread; photo callbacks on the photo
/// output's queue. All state is behind `lock`. A shutter press is requested only after the
/// previous one took its frame (reported by the photo output, or three frames later on the
/// clock), so every photo is a different frame; with --wait-for-face the photo is the analysed
/// frame itself.
final class Shutter: CaptureVideoDataOutputSampleBufferDelegate, CapturePhotoCaptureDelegate, @unchecked Sendable
{
    // @unchecked: the mutable state is only touched with `lock` held; the rest is immutable.
    let photoOutput: CapturePhotoOutput
    let urls: [URL]
    let codec: PhotoCodec
    let interval: Double
    let waitForFace: Bool
    let printer: EventPrinter
    /// `maxPhotoDimensions` for each photo (nil: the capture size).
    let photoDimensions: @Sendable () -> CaptureDevice.Dimensions?
    let flashMode: PhotoFlashMode
    /// Whether photos may replace existing files (--overwrite).
    let overwrite: Bool
    let stop: @Sendable () -> Void

    private let lock = NSLock()
    private let inFlight = DispatchGroup()
    private var requested = 0
    private var writtenCount = 0
    private var failedCount = 0
    private var faceArmed: Bool
    /// The capture that has not yet taken its frame.
    private var awaitingFrame: Int64?
    private var lastShutterTime: Double?
    private var closed = false
    private var facesByCapture: [Int64: [Int]] = [:]

    init(
        photoOutput: CapturePhotoOutput, urls: [URL], codec: PhotoCodec, interval: Double, waitForFace: Bool,
        printer: EventPrinter, photoDimensions: @escaping @Sendable () -> CaptureDevice.Dimensions? = { nil },
        flashMode: PhotoFlashMode = .off, overwrite: Bool = false, stop: @escaping @Sendable () -> Void
    ) {
        self.overwrite = overwrite
        self.photoDimensions = photoDimensions
        self.flashMode = flashMode
        self.photoOutput = photoOutput
        self.urls = urls
        self.codec = codec
        self.interval = interval
        self.waitForFace = waitForFace
        self.printer = printer
        self.stop = stop
        faceArmed = !waitForFace
    }

    var written: Int { lock.withLock { writtenCount } }
    var armed: Bool { lock.withLock { faceArmed } }

    /// What happened, once the session stopped and `waitUntilFinished` returned.
    var outcome: (written: Int, failed: Int, faceSeen: Bool) {
        lock.withLock { (writtenCount, failedCount, !waitForFace || faceArmed) }
    }

    /// No more shutter presses (the timeout passed).
    func timeOut() { lock.withLock { closed = true } }

    /// Blocks until every requested capture has finished (photo written or failed).
    func waitUntilFinished() {
        lock.withLock { closed = true }
        inFlight.wait()
    }

    // MARK: Frames and faces

    func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
        let t = sampleBuffer.presentationTimeStamp.seconds
        // The photo output hears of each frame before this clock does, and the clock runs at most
        // two frames behind the capture thread, so three frames after a request its frame was taken
        // (its delegate, busy encoding, may report that much later for a fast file).
        lock.withLock {
            if awaitingFrame != nil, let last = lastShutterTime, t >= last + 3 * sampleBuffer.duration.seconds - 1e-9 {
                awaitingFrame = nil
            }
        }
        // With --wait-for-face the analysed frames press the shutter (`observe`).
        if !waitForFace { press(at: t, faces: [], of: nil) }
    }

    /// With --wait-for-face: one analysed frame and exactly the faces found in it (on the face
    /// thread, in analysis order). The first frame with a face is photographed itself, and with
    /// --count the analysed frames `interval` seconds of frame time apart after it.
    func observe(_ frame: SampleBuffer, faces: [MetadataFaceObject]) {
        press(at: frame.presentationTimeStamp.seconds, faces: faces, of: frame)
    }

    /// Requests the next photo when it is due: the first at the first frame (or the first face),
    /// the others `interval` seconds of frame time apart. `frame`: the frame to photograph
    /// (--wait-for-face), or nil for the next one the input delivers.
    private func press(at time: Double, faces: [MetadataFaceObject], of frame: SampleBuffer?) {
        let settings: CapturePhotoSettings? = lock.withLock {
            if !faceArmed {
                guard !faces.isEmpty else { return nil }
                faceArmed = true
            } else if let last = lastShutterTime, time - last < interval {
                return nil
            }
            guard !closed, awaitingFrame == nil, requested < urls.count else { return nil }
            let settings = CapturePhotoSettings(
                codec: codec, flashMode: flashMode, fileURL: urls[requested],
                annotation: PhotoAnnotation(reason: waitForFace ? "face" : "snap", frameTime: time, faces: faces))
            requested += 1
            // A delivered frame is taken at once; a shutter press waits for the next frame.
            if frame == nil { awaitingFrame = settings.uniqueID }
            lastShutterTime = time
            facesByCapture[settings.uniqueID] = faces.map(\.faceID)
            inFlight.enter()
            return settings
        }
        guard var settings else { return }
        // Only for a shutter press ('max' asks the photo output), outside `lock`.
        settings.maxPhotoDimensions = photoDimensions()
        settings.replacesExistingFile = overwrite
        do {
            if let frame {
                try photoOutput.capturePhoto(of: frame, with: settings, delegate: self)
            } else {
                try photoOutput.capturePhoto(with: settings, delegate: self)
            }
        } catch {
            lock.withLock {
                failedCount += 1
                awaitingFrame = nil
            }
            printer.emit(ErrorEvent(error), text: "error: \(error.message)")
            inFlight.leave()
            stop()
        }
    }

    // MARK: Photo lifecycle (photo output's delegate queue)

    func photoOutput(_ output: CapturePhotoOutput, didCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings) {
        lock.withLock { if awaitingFrame == resolvedSettings.uniqueID { awaitingFrame = nil } }
    }

    func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?) {
        let faceIDs = lock.withLock { facesByCapture[photo.resolvedSettings.uniqueID] ?? [] }
        if let error = error.map(CaptureError.delegated) {
            lock.withLock { failedCount += 1 }
            printer.emit(ErrorEvent(error), text: "error: \(error.message)")
            return
        }
        guard let url = photo.fileURL else { return }
        let size = photo.resolvedSettings.photoDimensions
        printer.emit(
            SnapshotEvent(
                path: url.path, time: eventTime(photo.timestamp), width: size.width, height: size.height, faceIDs: faceIDs,
                reason: waitForFace ? "face" : "snap"),
            at: photo.timestamp,
            text: "\(printer.timeText(photo.timestamp))  snapshot \(url.path)  \(size)"
                + (faceIDs.isEmpty ? "" : "  faces \(faceIDs.map(String.init).joined(separator: ","))"))
        lock.withLock { writtenCount += 1 }
    }

    func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings, error: (any Error)?
    ) {
        let done = lock.withLock {
            if awaitingFrame == resolvedSettings.uniqueID { awaitingFrame = nil }
            return writtenCount + failedCount >= urls.count
        }
        inFlight.leave()
        if done { stop() }
    }
}
