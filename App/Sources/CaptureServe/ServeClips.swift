import CaptureJobs
import CaptureKit
import Foundation

/// A camera's event clips in the daemon: a `CaptureClipOutput` on the camera's session (its
/// frames buffered for the pre-roll), started and ended by the camera's face, code and motion
/// events (`trigger`, fed by `ServeMetadataLog`), each finished clip a `clip` event on the
/// camera's events topic.
///
/// Threading: made and finished on the camera's thread; the outputs run on their own queues.
package final class ServeClips: Sendable {
    package let output: CaptureClipOutput
    package let trigger: ServeClipTrigger
    package let announcer: ClipAnnouncer

    package init(settings: ServeConfig.Clips, camera: String, session: CaptureSession, input: InputOptions, printer: EventPrinter) throws {
        output = try settings.options.makeOutput(prefix: camera)
        announcer = ClipAnnouncer(printer: printer)
        output.setDelegate(announcer, queue: nil)
        trigger = ServeClipTrigger(
            metadata: ClipMetadataTrigger(clipOutput: output, faces: settings.faces, codes: settings.codes), motion: settings.motion)
        try session.addOutput(output)
        input.orient(output)
    }

    /// Waits until the clip the stopped session ended is on disk and announced.
    package func finish() { output.waitUntilIdle() }
}

/// Passes a camera's metadata events to its clip output: faces and codes as
/// `ClipMetadataTrigger` does, and, with `motion`, motion as the `.motion` subject (in view from
/// a `motion` `start` to its `end`, whose time is the last frame that moved), so a clip runs
/// from `preRoll` before the motion started to `postRoll` after it stopped.
///
/// Threading: thread-safe; called on the camera's metadata delegate queue.
package struct ServeClipTrigger: Sendable {
    package let metadata: ClipMetadataTrigger
    package let motion: Bool

    package init(metadata: ClipMetadataTrigger, motion: Bool) {
        self.metadata = metadata
        self.motion = motion
    }

    package func handle(_ events: [MetadataEvent]) {
        metadata.handle(events)
        guard motion else { return }
        for event in events {
            switch event {
            case .motionStarted(let m): metadata.clipOutput.subjectEntered(.motion, at: m.time)
            case .motionEnded(let m): metadata.clipOutput.subjectLeft(.motion, at: m.time)
            default: break
            }
        }
    }
}
