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
    package let trigger: ClipMetadataTrigger
    package let announcer: ClipAnnouncer

    package init(settings: ServeConfig.Clips, camera: String, session: CaptureSession, input: InputOptions, printer: EventPrinter) throws {
        output = try settings.options.makeOutput(prefix: camera)
        announcer = ClipAnnouncer(printer: printer)
        output.setDelegate(announcer, queue: nil)
        trigger = ClipMetadataTrigger(clipOutput: output, faces: settings.faces, codes: settings.codes, motion: settings.motion)
        try session.addOutput(output)
        input.orient(output)
    }

    /// Waits until the clip the stopped session ended is on disk and announced.
    package func finish() { output.waitUntilIdle() }
}

