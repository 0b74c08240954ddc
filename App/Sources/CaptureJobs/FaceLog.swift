import ArgumentParser
import CaptureKit
import Foundation
import Logging

/// Prints face events as they arrive (on its own serial queue).
package final class FaceLog: CaptureMetadataOutputObjectsDelegate, @unchecked Sendable {
    // @unchecked: `seen` is only touched on the delegate's serial queue, and read after it is idle.
    package let printer: EventPrinter
    package let everyFrame: Bool
    package let sources: SourceNames
    /// Added to the tracker's faceIDs: the IDs earlier inputs of the run used.
    package let idOffset: Int
    private var seen = Set<Int>()

    package init(printer: EventPrinter, everyFrame: Bool, sources: SourceNames = .none, idOffset: Int = 0) {
        self.printer = printer
        self.everyFrame = everyFrame
        self.sources = sources
        self.idOffset = idOffset
    }

    package var facesSeen: Int { seen.count }
    /// The highest tracker faceID this input printed (read after the input ended).
    package var highestFaceID: Int { seen.max() ?? 0 }

    package func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [any MetadataObject], from connection: CaptureConnection
    ) {
        guard everyFrame else { return }
        for case let face as MetadataFaceObject in metadataObjects { print(face, event: FaceEvent.everyFrame) }
    }

    package func metadataOutput(_ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection) {
        for event in events {
            switch event {
            case .faceEntered(let face):
                seen.insert(face.faceID)
                print(face, event: event.name)
            case .faceUpdated(let face), .faceLeft(let face): print(face, event: event.name)
            default: break
            }
        }
    }

    private func print(_ face: MetadataFaceObject, event: String) {
        let view = printer.view(face.bounds)
        let angles =
            (face.hasRollAngle ? String(format: "  roll %+.0f", face.rollAngle) : "")
            + (face.hasYawAngle ? String(format: " yaw %+.0f", face.yawAngle) : "")
        var record = MetadataRecord.Face(face)
        record.faceID += idOffset
        printer.emit(
            FaceEvent(
                event: event, time: eventTime(face.time), face: record, viewBox: view.box,
                source: sources.name(face.time)),
            at: face.time,
            text: "\(sources.prefix(face.time))\(printer.timeText(face.time))  \(event.padding(toLength: 6, withPad: " ", startingAt: 0)) face \(record.faceID)  box \(EventPrinter.boxText(face.bounds))  score \(String(format: "%.2f", face.confidence))\(angles)\(view.text)"
        )
    }
}
