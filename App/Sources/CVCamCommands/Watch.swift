import ArgumentParser
import CaptureJobs
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

            With --clips DIR, each face's visit is also recorded as an event clip \
            (Motion-JPEG AVI, crash-safe to its last fragment): from --pre-roll seconds before \
            the face entered to --post-roll seconds after the last face left, at most \
            --max-clip seconds each, named <camera>-<yyyyMMdd-HHmmss.mmm>-clip.avi; each \
            prints a `clip` event. With --clip-triggers faces,codes a QR or Micro QR code \
            coming into view starts a clip too (and keeps it going while it stays); \
            --clip-triggers codes leaves faces to the snapshots; with --motion, \
            --clip-triggers motion starts one on motion (from --pre-roll before it started to \
            --post-roll after it ended). --max-age, --max-bytes and \
            --min-free-space keep this camera's snapshots and clips (each kind on its own) within limits, removing the \
            oldest first and nothing cvcam did not name; each removal prints a `retention` event.

            With --motion, faces (and codes for --clip-triggers) are looked for at the full rate \
            only while something moves, and every --motion-idle-interval seconds otherwise, as \
            `cvcam serve` does; each motion prints a `motion` event when it starts and ends.

            Exit codes: 0 ok; 1 runtime error (input failed, a snapshot could not be written); \
            64 usage error.
            """)

    @OptionGroup var input: InputOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var faceOptions: FaceOptions

    @OptionGroup var snapshot: SnapshotOptions
    @OptionGroup(title: "Event clips") var clips: ClipOptions
    @OptionGroup(title: "Retention") var retention: RetentionOptions
    @OptionGroup(title: "Motion") var motion: MotionOptions

    @Option(
        help: ArgumentHelp(
            "What starts a clip with --clips: faces, codes (QR and Micro QR), motion (with --motion), comma-separated.",
            valueName: "list"))
    var clipTriggers: String = "faces"

    func validate() throws {
        try input.requireSingleInput("watch")
        let triggers = try Self.clipTriggers(clipTriggers)
        if clips.dir == nil && triggers != [.faces] { throw ValidationError("--clip-triggers needs --clips DIR.") }
        if triggers.contains(.motion) && !motion.motion {
            throw ValidationError("--clip-triggers motion needs --motion: without it nothing looks for motion.")
        }
    }

    /// What starts a clip in `watch`.
    enum ClipTrigger: String, CaseIterable { case faces, codes, motion }

    /// `--clip-triggers`: names from `ClipTrigger`, comma-separated, at least one.
    static func clipTriggers(_ text: String) throws -> Set<ClipTrigger> {
        var chosen = Set<ClipTrigger>()
        for name in text.split(separator: ",", omittingEmptySubsequences: false) {
            let word = name.trimmingCharacters(in: .whitespaces).lowercased()
            guard let trigger = ClipTrigger(rawValue: word) else {
                throw ValidationError(
                    "--clip-triggers takes faces, codes and motion, comma-separated: '\(TerminalText.escaped(word))' is not one of them.")
            }
            chosen.insert(trigger)
        }
        return chosen
    }

    func run() throws {
        let folder = URL(fileURLWithPath: snapshot.dir, isDirectory: true)
        try LocalFiles.makeFolder(snapshot.dir, what: "the snapshot folder")
        // Refused now, not at the first face hours later: snapshots need to create files in it.
        guard access(folder.path, W_OK | X_OK) == 0 else {
            throw CLIError.message("Cannot write snapshots to \(snapshot.dir): \(AtomicFile.advice(for: errno, folder: snapshot.dir)).")
        }
        let job = try CaptureJob(input: input, output: output)
        var store = SnapshotStore(
            folder: folder, quality: snapshot.quality, device: job.device, rotation: Int32(input.rotate.degrees), mirrored: input.mirror)
        // Named by camera and wall time; a name taken (by this or another run) gets a suffix.
        store.namePrefix = SnapshotStore.sanitizedName(job.device.localizedName)
        store.frameClock = job.device.source.timestampClock
        let watcher = SnapshotWatcher(
            trigger: SnapshotTrigger(configuration: snapshot.triggerConfiguration), store: store, printer: job.printer)
        // Every analysed frame with exactly its faces goes to the watcher (see FaceObservingStage).
        let metadata = try faceOptions.faceOutput(for: input, latency: job) { frame, faces in
            watcher.consider(frame, faces: faces)
        }
        metadata.motionDetection = motion.settings()
        // What the face output's events go to: the clip trigger (faces, motion) and the motion log.
        var delegates: [any CaptureMetadataOutputObjectsDelegate] = []
        // Clips: the camera's frames buffered for the pre-roll; faces (and codes, when asked)
        // entering and leaving start and end them.
        let clipOutput = try clips.dir.map { _ in try clips.makeOutput(prefix: store.namePrefix) }
        let announcer = ClipAnnouncer(printer: job.printer)
        var codeOutput: CaptureMetadataOutput?
        if let clipOutput {
            let triggers = try Self.clipTriggers(clipTriggers)
            clipOutput.setDelegate(announcer, queue: nil)
            if triggers.contains(.faces) || triggers.contains(.motion) {
                delegates.append(
                    ClipMetadataTrigger(clipOutput: clipOutput, faces: triggers.contains(.faces), motion: triggers.contains(.motion)))
            }
            if triggers.contains(.codes) {
                // Codes on an output of their own: the face output has no code stage (it feeds the snapshots).
                let codes = CaptureMetadataOutput(faceStage: nil, codeStage: DefaultCodeStage(detector: try CodeDetector()))
                try codes.setMetadataObjectTypes([.qr, .microQR])
                codes.rectOfInterest = input.regionOfInterest
                codes.motionDetection = motion.settings()
                codes.setMetadataObjectsDelegate(
                    ClipMetadataTrigger(clipOutput: clipOutput, faces: false, codes: true),
                    queue: DispatchQueue(label: "cvcam.watch.clip-codes"))
                try job.add(codes)
                codeOutput = codes
            }
            try job.add(clipOutput)
        }
        if motion.motion { delegates.append(MotionLog(printer: job.printer)) }
        if !delegates.isEmpty {
            metadata.setMetadataObjectsDelegate(
                delegates.count == 1 ? delegates[0] : MetadataDelegates(delegates), queue: DispatchQueue(label: "cvcam.watch.events"))
        }
        let keeper = retention.keeper(
            camera: store.namePrefix, folders: [(.snapshots, folder.path)] + (clips.dir.map { [(.clips, $0)] } ?? []),
            printer: job.printer)
        keeper?.start()
        defer { keeper?.stop() }
        job.statsCounts = { [session = job.session] in
            .init(frames: session.capturedFrameCount, analysed: metadata.analysedFrameCount, skipped: metadata.skippedFrameCount)
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
        codeOutput?.waitUntilIdle()
        // The input ended or a signal stopped it: the windows still open decide now.
        watcher.finish()
        clipOutput?.waitUntilIdle()
        job.reportRuntimeError()
        if !output.quiet || output.json {
            var summary = job.summary(processed: metadata.analysedFrameCount, skipped: metadata.skippedFrameCount)
            summary.snapshots = watcher.writtenCount
            summary.dir = folder.path
            if clipOutput != nil { summary.clips = announcer.writtenCount }
            job.printer.emit(
                summary,
                text: String(
                    format: "summary: %d frames, %d analysed at %.1f fps, %d skipped, %d snapshots in %@",
                    job.session.capturedFrameCount, metadata.analysedFrameCount, summary.fps,
                    metadata.skippedFrameCount, watcher.writtenCount, folder.path) + job.formatSummary)
        }
        if job.runtimeError != nil || watcher.failedCount > 0 || announcer.failedCount > 0 {
            throw ExitCode(ExitStatus.runtimeError)
        }
    }
}
