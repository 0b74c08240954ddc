import CaptureKit
import Foundation

/// An event clip written (`CaptureClipOutput`): the file, its first and last frame (`start`,
/// `end`: frame times, as `time` elsewhere; `startWallTime`, `endWallTime`), what it holds,
/// the face IDs that were in view, the subjects that kept it going (`triggers`: `face`,
/// `code`, `motion`), whether it follows on from a clip cut at `maxClip` (`continues`), and why
/// it ended (`ended`: `postRoll`, `maxClip`, `stopped`, `writeFailed`). The event's `wallTime`
/// is the clip's end.
package struct ClipEvent: EventBody {
    package static let type = EventType.clip

    package var path: String
    package var start: Double
    package var end: Double
    package var startWallTime: String
    package var endWallTime: String
    package var duration: Double
    package var frames: Int
    package var bytes: Int64
    package var faceIDs: [Int]
    package var triggers: [String]
    package var continues: Bool
    package var ended: String

    /// Creates the value from each of its properties.
    package init(
        path: String, start: Double, end: Double, startWallTime: String, endWallTime: String, duration: Double, frames: Int,
        bytes: Int64, faceIDs: [Int], triggers: [String], continues: Bool, ended: String
    ) {
        self.path = path
        self.start = start
        self.end = end
        self.startWallTime = startWallTime
        self.endWallTime = endWallTime
        self.duration = duration
        self.frames = frames
        self.bytes = bytes
        self.faceIDs = faceIDs
        self.triggers = triggers
        self.continues = continues
        self.ended = ended
    }

    /// The event of a clip the output finished.
    package init(_ clip: CaptureClip) {
        var triggers: [String] = []
        for subject in clip.subjects {
            let name: String =
                switch subject {
                case .face: "face"
                case .code: "code"
                case .motion: "motion"
                case .other(let other): other
                }
            if !triggers.contains(name) { triggers.append(name) }
        }
        let ended: String =
            switch clip.ending {
            case .postRollElapsed: "postRoll"
            case .maximumDurationReached: "maxClip"
            case .sessionStopped: "stopped"
            case .writeFailed: "writeFailed"
            }
        let duration = clip.frameCount == 0 ? 0 : clip.lastFrameTime.seconds - clip.firstFrameTime.seconds
        self.init(
            path: clip.url.path, start: eventTime(clip.firstFrameTime), end: eventTime(clip.lastFrameTime),
            startWallTime: LocalTimestamp(clip.firstFrameDate).rfc3339, endWallTime: LocalTimestamp(clip.lastFrameDate).rfc3339,
            duration: MetadataRecord.rounded(duration, 3), frames: clip.frameCount, bytes: clip.fileSize, faceIDs: clip.faceIDs,
            triggers: triggers, continues: clip.continuesPreviousClip, ended: ended)
    }
}

/// Files retention removed: which `kind` (`snapshots`, `clips`, `recordings`), why (`reason`:
/// `maxAge`, `maxBytes`, `minFreeSpace`), how many (`count`) and bytes (`bytes`), and the
/// files themselves (`files`: path, bytes, modification time; at most 50 named, `count`
/// counts all).
package struct RetentionEvent: EventBody {
    package static let type = EventType.retention

    package struct File: Codable, Equatable, Sendable {
        package var path: String
        package var bytes: Int64
        package var modified: String

        /// Creates the value from each of its properties.
        package init(path: String, bytes: Int64, modified: String) {
            self.path = path
            self.bytes = bytes
            self.modified = modified
        }
    }

    package var kind: String
    package var reason: String
    package var count: Int
    package var bytes: Int64
    package var files: [File]

    /// Creates the value from each of its properties.
    package init(kind: String, reason: String, count: Int, bytes: Int64, files: [File]) {
        self.kind = kind
        self.reason = reason
        self.count = count
        self.bytes = bytes
        self.files = files
    }
}
