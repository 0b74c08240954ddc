import ArgumentParser
import CaptureKit
import Foundation
import Logging

/// `cvcam watch`: face-triggered automatic snapshots (`SnapshotTrigger` + `SnapshotStore`).
struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Take snapshots automatically when faces appear (or every --every seconds while they stay).",
        discussion: """
            A face counts when it passes every gate (--min-face-size, --min-score, --max-roll, \
            --max-yaw, --min-sharpness). A new face opens a best-frame window of --best-of \
            frames; the sharpest, most frontal frame of it is written to --dir as \
            <camera>-<yyyyMMdd-HHmmss.mmm>-face<faceIDs>.jpg (the input's name and the frame's \
            local wall time; an existing file is never replaced: a taken name gets -2, -3, …), \
            full resolution, with the record (time, faceIDs, \
            boxes, scores, reason) as JSON in EXIF UserComment and --pre-frames earlier frames \
            as <name>-pre-NN.jpg. Each snapshot prints a `snapshot` event (path, reason, \
            faceIDs). Files are written atomically. SIGINT or SIGTERM writes the snapshots still \
            being chosen, then exits 0. Times are frame times, so a file gives the same \
            snapshots on every run.

            Exit codes: 0 ok; 1 runtime error (input failed, a snapshot could not be written); \
            64 usage error.
            """)

    @OptionGroup var input: InputOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var faceOptions: FaceOptions

    @Option(help: "Folder for the snapshots (created if missing).", completion: .directory, transform: InputOptions.argumentBytes)
    var dir: String

    @Option(help: "Smallest face, as a fraction of the frame height (0…1).")
    var minFaceSize: Double = 0.05

    @Option(help: "Smallest detector score (0…1).")
    var minScore: Double = 0.6

    @Option(help: "Largest head roll in degrees (0…180; 180: no limit).")
    var maxRoll: Double = 30

    @Option(help: "Largest head yaw in degrees (0…180; 180: no limit).")
    var maxYaw: Double = 45

    @Option(help: "Smallest sharpness of the face box (variance of the Laplacian, e.g. 50); default: no gate.")
    var minSharpness: Double?

    @Option(help: "Qualifying frames to choose the best from (1: take the first).")
    var bestOf: Int = 1

    @Option(help: "Seconds before a face still in view triggers again; default: once per face.")
    var faceCooldown: Double?

    @Option(help: "Seconds after any snapshot during which no other is taken.")
    var cooldown: Double = 0

    @Option(help: "Frames from before the chosen one to write too (0…30).")
    var preFrames: Int = 0

    @Option(help: "At most this many snapshots per --window seconds; default: no limit.")
    var maxPerWindow: Int?

    @Option(help: "The window, in seconds, for --max-per-window.")
    var window: Double = 60

    @Option(help: "Interval mode: a snapshot every SECONDS while faces are in view, instead of one per new face.")
    var every: Double?

    @Option(help: "JPEG quality, 1…100.")
    var quality: Int = 92

    func validate() throws {
        try input.requireSingleInput("watch")
        // The folder is created through Foundation paths, which would store such a name's bytes altered.
        guard !dir.unicodeScalars.contains(where: { FilePathBytes.carriedByte($0) != nil }) else {
            throw ValidationError(
                "--dir '\(TerminalText.escaped(dir))' is not a UTF-8 folder name; use a UTF-8 name for the snapshot folder.")
        }
        try OptionRange.check(minFaceSize, 0...1, "--min-face-size")
        try OptionRange.check(minScore, 0...1, "--min-score")
        try OptionRange.check(maxRoll, 0...180, "--max-roll", unit: " degrees")
        try OptionRange.check(maxYaw, 0...180, "--max-yaw", unit: " degrees")
        try OptionRange.check(minSharpness, 0...1_000_000, "--min-sharpness")
        try OptionRange.check(bestOf, 1...300, "--best-of", unit: " frames")
        try OptionRange.check(faceCooldown, OptionRange.seconds, "--face-cooldown", unit: " seconds")
        try OptionRange.check(cooldown, OptionRange.seconds, "--cooldown", unit: " seconds")
        try OptionRange.check(preFrames, 0...30, "--pre-frames")
        try OptionRange.check(maxPerWindow, 1...1_000_000, "--max-per-window")
        try OptionRange.check(window, OptionRange.positiveSeconds, "--window", unit: " seconds")
        try OptionRange.check(every, OptionRange.positiveSeconds, "--every", unit: " seconds")
        try OptionRange.check(quality, 1...100, "--quality")
    }

    /// The trigger configuration the flags describe.
    var triggerConfiguration: SnapshotTrigger.Configuration {
        SnapshotTrigger.Configuration(
            mode: every.map { .interval(seconds: $0) } ?? .newFace, minimumFaceSize: minFaceSize, minimumConfidence: minScore,
            maximumRollAngle: maxRoll >= 180 ? nil : maxRoll, maximumYawAngle: maxYaw >= 180 ? nil : maxYaw,
            minimumSharpness: minSharpness, bestFrameWindow: bestOf, faceCooldown: faceCooldown, globalCooldown: cooldown,
            preTriggerFrameCount: preFrames, maximumSnapshotsPerWindow: maxPerWindow, snapshotWindow: window)
    }

    func run() throws {
        let folder = URL(fileURLWithPath: dir, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw CLIError.message("Cannot create the snapshot folder \(dir): \(error.localizedDescription)")
        }
        // Refused now, not at the first face hours later: snapshots need to create files in it.
        guard access(folder.path, W_OK | X_OK) == 0 else {
            throw CLIError.message("Cannot write snapshots to \(dir): \(AtomicFile.advice(for: errno, folder: dir)).")
        }
        let job = try CaptureJob(input: input, output: output)
        var store = SnapshotStore(
            folder: folder, quality: quality, device: job.device, rotation: Int32(input.rotate.degrees), mirrored: input.mirror)
        // Named by camera and wall time; a name taken (by this or another run) gets a suffix.
        store.namePrefix = SnapshotStore.sanitizedName(job.device.localizedName)
        store.frameClock = job.device.source.timestampClock
        let watcher = SnapshotWatcher(
            trigger: SnapshotTrigger(configuration: triggerConfiguration), store: store, printer: job.printer)
        // Every analysed frame with exactly its faces goes to the watcher (see FaceObservingStage).
        let metadata = try faceOptions.faceOutput(for: input, latency: job) { frame, faces in
            watcher.consider(frame, faces: faces)
        }
        job.statsCounts = { [session = job.session] in
            .init(frames: session.capturedFrameCount, analysed: metadata.processedFrameCount, skipped: metadata.skippedFrameCount)
        }
        try job.add(metadata)
        let total = job.expectedFrameCount
        try job.run { [job] in
            let done = metadata.processedFrameCount
            let seconds = max(job.elapsed, 0.001)
            var text = String(
                format: "%.1f fps  skipped %d  snapshots %d", Double(done) / seconds, metadata.skippedFrameCount,
                watcher.writtenCount)
            if let total { text += "  " + StatusLine.progress(done: done, total: total, perSecond: Double(done) / seconds) }
            return text
        }
        metadata.waitUntilIdle()
        // The input ended or a signal stopped it: the windows still open decide now.
        watcher.finish()
        job.reportRuntimeError()
        if !output.quiet || output.json {
            var summary = job.summary(processed: metadata.processedFrameCount, skipped: metadata.skippedFrameCount)
            summary.snapshots = watcher.writtenCount
            summary.dir = folder.path
            job.printer.emit(
                summary,
                text: String(
                    format: "summary: %d frames, %d analysed at %.1f fps, %d skipped, %d snapshots in %@",
                    job.session.capturedFrameCount, metadata.processedFrameCount, summary.fps,
                    metadata.skippedFrameCount, watcher.writtenCount, folder.path) + job.formatSummary)
        }
        if job.runtimeError != nil || watcher.failedCount > 0 { throw ExitCode(ExitStatus.runtimeError) }
    }
}

/// Runs the trigger over (frame, faces) pairs and writes the snapshots it decides, printing a
/// `snapshot` event for each.
///
/// Threading: `consider` and `finish` may be called from any thread; the trigger and the store
/// run on one serial queue, in frame order.
final class SnapshotWatcher: @unchecked Sendable {
    // @unchecked: `trigger` and the counters are only touched on `queue` (counters are read
    // after `finish`, which waits for the queue, or for the status line, where a stale value is fine).
    private let trigger: SnapshotTrigger
    let store: SnapshotStore
    let printer: EventPrinter
    private let queue = DispatchQueue(label: "cvcam.watch.trigger")
    private(set) var writtenCount = 0
    private(set) var failedCount = 0
    private var facesInView: [Int] = []
    private let logger = Logger(label: "cvcam.watch")

    init(trigger: SnapshotTrigger, store: SnapshotStore, printer: EventPrinter) {
        self.trigger = trigger
        self.store = store
        self.printer = printer
    }

    func consider(_ frame: SampleBuffer, faces: [MetadataFaceObject]) {
        queue.async { [self] in
            write(trigger.process(frame, faces: faces))
            // With --verbose: which faces the trigger has seen, each time that changes.
            let ids = faces.map(\.faceID).sorted()
            if ids != facesInView {
                facesInView = ids
                logger.debug(
                    "faces in view: [\(ids.map(String.init).joined(separator: ","))] at \(String(format: "%.3f", frame.presentationTimeStamp.seconds)) s")
            }
        }
    }

    /// Decides the open windows and writes their snapshots; returns when everything is on disk.
    func finish() {
        queue.sync { write(trigger.finish()) }
    }

    private func write(_ snapshots: [Snapshot]) {
        for snapshot in snapshots {
            do {
                // One moment for the file's name, its EXIF date and the event's wallTime.
                let wall = printer.wallDate(snapshot.frame.presentationTimeStamp)
                let url = try store.write(snapshot, captureDate: wall)
                writtenCount += 1
                let pre = snapshot.precedingFrames.count
                let ids = snapshot.triggeringFaceIDs
                printer.emit(
                    SnapshotEvent(
                        path: url.path, time: eventTime(snapshot.frame.presentationTimeStamp), width: snapshot.frame.width,
                        height: snapshot.frame.height, faceIDs: ids, reason: snapshot.reason.rawValue,
                        faces: snapshot.faces.map(\.faceID), preFrames: pre),
                    wall: wall,
                    text: "\(printer.timeText(snapshot.frame.presentationTimeStamp))  snapshot \(url.path)  \(snapshot.reason.rawValue)  faces \(ids.map(String.init).joined(separator: ","))"
                        + (pre == 0 ? "" : "  +\(pre) earlier frames"))
            } catch {
                failedCount += 1
                printer.emit(ErrorEvent(error), text: "error: \(error.message)")
            }
        }
    }
}
