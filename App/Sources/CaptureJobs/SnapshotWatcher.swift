import ArgumentParser
import CaptureKit
import Foundation
import Logging

/// Runs the trigger over (frame, faces) pairs and writes the snapshots it decides, printing a
/// `snapshot` event for each.
///
/// Threading: `consider` and `finish` may be called from any thread; the trigger and the store
/// run on one serial queue, in frame order.
package final class SnapshotWatcher: @unchecked Sendable {
    // @unchecked: `trigger` and the counters are only touched on `queue` (counters are read
    // after `finish`, which waits for the queue, or for the status line, where a stale value is fine).
    private let trigger: SnapshotTrigger
    package let store: SnapshotStore
    package let printer: EventPrinter
    private let queue = DispatchQueue(label: "cvcam.watch.trigger")
    package private(set) var writtenCount = 0
    package private(set) var failedCount = 0
    private var facesInView: [Int] = []
    private let logger = Logger(label: "cvcam.watch")

    package init(trigger: SnapshotTrigger, store: SnapshotStore, printer: EventPrinter) {
        self.trigger = trigger
        self.store = store
        self.printer = printer
    }

    package func consider(_ frame: SampleBuffer, faces: [MetadataFaceObject]) {
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
    package func finish() {
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
