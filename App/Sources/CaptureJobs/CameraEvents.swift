import CaptureKit
import Dispatch
import Foundation
import Synchronization

/// A running session's events as the CLI reports them: `interrupted` the moment the camera goes
/// away, `interruptionEnded` when it is back, and the error that stopped the session, if one did
/// (an unplug is not such an error: the session waits for the camera, and a stop while it waits
/// is the user's).
///
/// Threading: `handle` runs on `queue` (serial); `stoppingError` may be read from any thread,
/// and is complete once `queue` has run everything the stopped session queued.
package final class CameraEvents: Sendable {
    package let queue = DispatchQueue(label: "cvcam.session-events")
    private let printer: EventPrinter
    private let stopError = Mutex<CaptureError?>(nil)

    package init(printer: EventPrinter) { self.printer = printer }

    /// The runtime error that stopped the session, nil when it stopped for another reason.
    package var stoppingError: CaptureError? { stopError.withLock { $0 } }

    package func handle(_ event: CaptureSession.Event) {
        switch event {
        case .wasInterrupted(let error):
            printer.emit(
                InterruptedEvent(code: error.code.rawValue, message: error.message),
                text: "interrupted: \(error.message); waiting for the camera to come back (Ctrl-C stops)")
        case .interruptionEnded:
            printer.emit(InterruptionEndedEvent(), text: "interruptionEnded: the camera is back; frames flow again")
        case .runtimeError(let error):
            stopError.withLock { $0 = error }
        default:
            break
        }
    }

    /// The `format` event of a camera that negotiated a format, with its text ("/dev/video0
    /// MJPG 1280x720@30", and what was asked for when the driver adjusted it); nil for other inputs.
    package static func formatEvent(_ device: CaptureDevice) -> (event: FormatEvent, text: String)? {
        guard let negotiation = device.lastNegotiation, let path = device.source.capabilities?.devicePath else { return nil }
        let granted = negotiation.granted
        let event = FormatEvent(
            device: path, fourCC: granted.fourCC, width: granted.width, height: granted.height,
            fps: MetadataRecord.rounded(granted.frameRate, 3), adjusted: negotiation.wasAdjusted,
            requested: negotiation.wasAdjusted ? negotiation.requested.description : nil)
        let text =
            "\(path) \(device.localizedName): \(granted)"
            + (negotiation.wasAdjusted ? " (requested \(negotiation.requested); adjusted by the driver)" : "")
        return (event, text)
    }
}
