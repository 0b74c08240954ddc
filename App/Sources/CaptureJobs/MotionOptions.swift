import ArgumentParser
import CaptureKit
import Foundation

/// Motion detection and the gating of faces and codes by it (`CaptureMetadataOutput.MotionDetection`),
/// shared by the commands that detect (faces, scan, preview) and by `serve`'s `motion:` key.
///
/// Off unless `--motion` is given on the command line (a command analyses every frame, as the
/// library does); `serve` turns it on for every camera unless the camera says `motion: false`.
package struct MotionOptions: ParsableArguments {
    package init() {}

    @Flag(
        help: ArgumentHelp(
            "Look for faces and codes at the full rate only while something moves, and every --motion-idle-interval otherwise; report motion as `motion` events."))
    package var motion = false

    @Option(help: ArgumentHelp("Smallest change of brightness (1…255, after the frame's brightness is matched to the background's) that counts as motion.", valueName: "level"))
    package var motionThreshold = 25

    @Option(help: ArgumentHelp("Smallest moving area, as a fraction of the frame (0…1; 0.001 is about 30x30 pixels of 1280x720).", valueName: "fraction"))
    package var motionMinArea = 0.001

    @Option(help: ArgumentHelp("Seconds between analyses while nothing moves (0: every frame), so a code held still is still read.", valueName: "seconds"))
    package var motionIdleInterval = 2.0

    @Option(help: ArgumentHelp("Seconds without motion before a motion ends; frames are analysed at the full rate until then.", valueName: "seconds"))
    package var motionEndDelay = 1.0

    @Option(
        help: ArgumentHelp(
            "A rectangle x,y,w,h (0…1 of the frame, top-left origin) where motion is ignored: a tree, a road, a clock. Repeat for several (at most \(MotionDetector.Configuration.maximumMasks)).",
            valueName: "x,y,w,h"))
    package var motionMask: [String] = []

    package func validate() throws {
        try OptionRange.check(motionThreshold, 1...255, "--motion-threshold")
        try OptionRange.check(motionMinArea, 0...1, "--motion-min-area")
        try OptionRange.check(motionIdleInterval, OptionRange.seconds, "--motion-idle-interval", unit: " seconds")
        try OptionRange.check(motionEndDelay, OptionRange.seconds, "--motion-end-delay", unit: " seconds")
        try OptionRange.check(motionMask.count, 0...MotionDetector.Configuration.maximumMasks, "the number of --motion-mask")
        for mask in motionMask where InputOptions.parseRect(mask) == nil {
            throw ValidationError(
                "--motion-mask must be x,y,w,h: four numbers in 0…1 with w and h above 0, x+w ≤ 1 and y+h ≤ 1 (got '\(TerminalText.escaped(mask))').")
        }
    }

    /// The metadata output's setting: `.disabled` unless `enabled` (default: `--motion`).
    package func settings(enabled: Bool? = nil) -> CaptureMetadataOutput.MotionDetection {
        guard enabled ?? motion else { return .disabled }
        return CaptureMetadataOutput.MotionDetection(
            isEnabled: true, threshold: motionThreshold, minimumArea: motionMinArea, idleAnalysisInterval: motionIdleInterval,
            endDelay: motionEndDelay, masks: motionMask.compactMap(InputOptions.parseRect))
    }
}

/// Prints motion events (`MetadataEvent.motionStarted` / `.motionEnded`) as `motion` lines.
///
/// Threading: the metadata output's delegate queue (serial).
package final class MotionLog: CaptureMetadataOutputObjectsDelegate, @unchecked Sendable {
    // @unchecked: `count` is touched only on the delegate's serial queue and read after it is idle.
    package let printer: EventPrinter
    private var count = 0

    package init(printer: EventPrinter) { self.printer = printer }

    /// Motions started so far.
    package var motionsSeen: Int { count }

    package func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [any MetadataObject], from connection: CaptureConnection
    ) {}

    package func metadataOutput(_ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection) {
        for event in events {
            switch event {
            case .motionStarted(let m):
                count += 1
                print(m, event: event.name)
            case .motionEnded(let m): print(m, event: event.name)
            default: continue
            }
        }
    }

    private func print(_ motion: MetadataMotionObject, event: String) {
        let body = MotionEvent(event: event, motion: motion)
        let box = motion.bounds
        let text = String(
            format: "%@  %@ MOTION  %d region%@, box %.3f,%.3f %.3fx%.3f", printer.timeText(motion.time),
            event.padding(toLength: 6, withPad: " ", startingAt: 0), motion.regions.count, motion.regions.count == 1 ? "" : "s",
            box.minX, box.minY, box.width, box.height)
        printer.emit(body, at: motion.time, text: text)
    }
}

/// Hands a metadata output's objects and events to several delegates, in order (a command's
/// face or code log and its `MotionLog`).
///
/// Threading: the metadata output's delegate queue (serial), as each delegate expects.
package final class MetadataDelegates: CaptureMetadataOutputObjectsDelegate, Sendable {
    package let delegates: [any CaptureMetadataOutputObjectsDelegate]

    package init(_ delegates: [any CaptureMetadataOutputObjectsDelegate]) { self.delegates = delegates }

    /// `log` alone, or `log` and a `MotionLog` when `options` turn motion on.
    package static func with(
        _ log: any CaptureMetadataOutputObjectsDelegate, motion options: MotionOptions, printer: EventPrinter
    ) -> any CaptureMetadataOutputObjectsDelegate {
        options.motion ? MetadataDelegates([log, MotionLog(printer: printer)]) : log
    }

    package func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [any MetadataObject], from connection: CaptureConnection
    ) {
        for d in delegates { d.metadataOutput(output, didOutput: metadataObjects, from: connection) }
    }

    package func metadataOutput(_ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection) {
        for d in delegates { d.metadataOutput(output, didEmit: events, from: connection) }
    }
}

extension CaptureMetadataOutput {
    /// Frames faces and codes were looked for in: `processedFrameCount` without the frames
    /// motion gating spared (`stillFrameCount`). What `stats`, the summary and the metrics call
    /// `analysed`.
    package var analysedFrameCount: Int { max(0, processedFrameCount - stillFrameCount) }
}
