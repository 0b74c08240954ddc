import CaptureJobs
import CaptureKit
import Foundation

/// The preview's WebSocket protocol: JSON text messages, one object each, with a `type`.
///
/// In (page → server): `view` (width, height, gravity), `connection` (rotation, mirrored),
/// `tap` (x, y), `drag` (x, y, width, height), `resetRectOfInterest`, `photo`.
/// Out (server → page): `geometry` (layer-space faces, codes, the moving regions, the frame's
/// rect and the rect of interest), `tap` (the device point and which of focus and exposure took it), `photo`,
/// `event`, `stats`, `error`. Every coordinate out is computed by `CaptureVideoPreviewLayer`;
/// the page draws the numbers as they come.
///
/// Value types; thread-safe.
package enum PreviewMessage {
    /// A message from the page. One flat shape: which fields matter depends on `type`, and
    /// `PreviewSocket` checks that they are there and finite.
    package struct Incoming: Decodable, Sendable {
        package enum Kind: String, Decodable, Sendable {
            case view, connection, tap, drag, resetRectOfInterest, photo
        }
        package var type: Kind
        package var width: Double?
        package var height: Double?
        package var gravity: String?
        package var rotation: Double?
        package var mirrored: Bool?
        package var x: Double?
        package var y: Double?

        /// Creates the value from each of its properties.
        package init(type: Kind, width: Double? = nil, height: Double? = nil, gravity: String? = nil, rotation: Double? = nil, mirrored: Bool? = nil, x: Double? = nil, y: Double? = nil) {
            self.type = type
            self.width = width
            self.height = height
            self.gravity = gravity
            self.rotation = rotation
            self.mirrored = mirrored
            self.x = x
            self.y = y
        }
    }

    package struct Rect: Encodable, Sendable, Equatable {
        package var x: Double, y: Double, width: Double, height: Double
        package init(_ r: CGRect) {
            x = Double(r.minX)
            y = Double(r.minY)
            width = Double(r.width)
            height = Double(r.height)
        }
    }

    package struct Point: Encodable, Sendable, Equatable {
        package var x: Double, y: Double
        package init(_ p: CGPoint) {
            x = Double(p.x)
            y = Double(p.y)
        }
    }

    package struct Face: Encodable, Sendable {
        package var faceID: Int
        package var score: Double
        /// Layer space (`transformedMetadataObject(for:)`).
        package var bounds: Rect
        /// Device space, as the metadata output delivered it (what `bounds` was converted from).
        package var deviceBounds: Rect

        /// Creates the value from each of its properties.
        package init(faceID: Int, score: Double, bounds: Rect, deviceBounds: Rect) {
            self.faceID = faceID
            self.score = score
            self.bounds = bounds
            self.deviceBounds = deviceBounds
        }
    }

    package struct Code: Encodable, Sendable {
        package var kind: String
        /// The payload as text, or `bytes:` and base64 when it is not UTF-8. Untrusted: the page
        /// shows it through `textContent` only.
        package var text: String
        /// Layer space, in the code's own corner order (`transformedMetadataObject(for:)`).
        package var corners: [Point]
        package var deviceBounds: Rect

        /// Creates the value from each of its properties.
        package init(kind: String, text: String, corners: [Point], deviceBounds: Rect) {
            self.kind = kind
            self.text = text
            self.corners = corners
            self.deviceBounds = deviceBounds
        }
    }

    /// The moving regions of the newest frame with motion (`MetadataMotionObject`). Only
    /// numbers: nothing in it comes from outside the process.
    package struct Motion: Encodable, Sendable, Equatable {
        /// The frame's media time, in seconds (the motion object's `time`).
        package var time: Double
        /// Fraction of the watched area that changed, 0…1.
        package var changedFraction: Double
        /// Each moving region, largest first; at most `maximumMotionRegions`.
        package var regions: [Region]

        package struct Region: Encodable, Sendable, Equatable {
            /// Layer space (`layerRectConverted(fromMetadataOutputRect:)`).
            package var bounds: Rect
            /// Device space, as the motion object carried it.
            package var deviceBounds: Rect

            /// Creates the value from each of its properties.
            package init(bounds: Rect, deviceBounds: Rect) {
                self.bounds = bounds
                self.deviceBounds = deviceBounds
            }
        }

        /// Creates the value from each of its properties.
        package init(time: Double, changedFraction: Double, regions: [Region]) {
            self.time = time
            self.changedFraction = changedFraction
            self.regions = regions
        }
    }

    /// Most moving regions one `geometry` message carries (the largest first; the rest are
    /// dropped): a page draws a bounded number of boxes whatever the scene does.
    package static let maximumMotionRegions = 16

    /// Everything the overlay draws, for one view.
    package struct Geometry: Encodable, Sendable {
        package let type = "geometry"
        /// Counts metadata updates (a new frame's faces, a code appearing or leaving).
        package var sequence: Int
        package var viewWidth: Double
        package var viewHeight: Double
        package var gravity: String
        package var rotation: Double
        package var mirrored: Bool
        /// Where the whole frame lands (`layerRectConverted` of the unit rect): the page places
        /// the video image there.
        package var video: Rect
        package var faces: [Face]
        package var codes: [Code]
        /// What is moving now (nil, and absent from the JSON: nothing is, or motion detection
        /// is off). Gone with the first frame analysed without motion, or the motion's end.
        package var motion: Motion?
        /// The metadata output's `rectOfInterest`, in layer space and as set (device space).
        package var rectOfInterest: Rect
        package var deviceRectOfInterest: Rect

        /// Creates the value from each of its properties.
        package init(sequence: Int, viewWidth: Double, viewHeight: Double, gravity: String, rotation: Double, mirrored: Bool, video: Rect, faces: [Face], codes: [Code], motion: Motion? = nil, rectOfInterest: Rect, deviceRectOfInterest: Rect) {
            self.sequence = sequence
            self.viewWidth = viewWidth
            self.viewHeight = viewHeight
            self.gravity = gravity
            self.rotation = rotation
            self.mirrored = mirrored
            self.video = video
            self.faces = faces
            self.codes = codes
            self.motion = motion
            self.rectOfInterest = rectOfInterest
            self.deviceRectOfInterest = deviceRectOfInterest
        }
    }

    package struct TapResult: Encodable, Sendable {
        package let type = "tap"
        package var layerPoint: Point
        /// `captureDevicePointConverted(fromLayerPoint:)`.
        package var devicePoint: Point
        /// Whether the camera took the point as its focus or exposure point of interest (either).
        package var pointOfInterestSet: Bool
        /// Whether it became the focus point of interest, with a focus operation started.
        package var focusPointOfInterestSet: Bool
        /// Whether it became the exposure point of interest, with auto exposure on it.
        package var exposurePointOfInterestSet: Bool
        package var message: String

        package init(layerPoint: Point, devicePoint: Point, focusSet: Bool, exposureSet: Bool, message: String) {
            self.layerPoint = layerPoint
            self.devicePoint = devicePoint
            pointOfInterestSet = focusSet || exposureSet
            focusPointOfInterestSet = focusSet
            exposurePointOfInterestSet = exposureSet
            self.message = message
        }
    }

    package struct Photo: Encodable, Sendable {
        package let type = "photo"
        package var url: String
        package var width: Int
        package var height: Int
        package var bytes: Int

        /// Creates the value from each of its properties.
        package init(url: String, width: Int, height: Int, bytes: Int) {
            self.url = url
            self.width = width
            self.height = height
            self.bytes = bytes
        }
    }

    package struct Event: Encodable, Sendable {
        package let type = "event"
        /// Seconds of media time.
        package var time: Double
        /// For a live camera (a V4L2 camera or a network stream), when it happened: RFC 3339
        /// with the offset, shown as the viewer's local time of day. Nil for files and synthetic
        /// scenes, whose events show their position (`time`).
        package var wallTime: String?
        package var text: String

        /// Creates the value from each of its properties.
        package init(time: Double, wallTime: String? = nil, text: String) {
            self.time = time
            self.wallTime = wallTime
            self.text = text
        }

        /// An event at frame time `time` on `clock`: with its wall-clock time for a live source,
        /// the frame's own (mapped from the monotonic clock) or, for a stream whose times are
        /// its own, the moment it is reported.
        package init(time: MediaTime, clock: FrameClock, live: Bool, text: String) {
            let wall: String? = clock == .monotonic || live ? LocalTimestamp(WallClock.shared.date(for: time, on: clock)).rfc3339 : nil
            self.init(time: time.seconds, wallTime: wall, text: text)
        }
    }

    package struct Stats: Encodable, Sendable {
        package let type = "stats"
        package var capturedFrames: Int
        /// Streamed frames encoded by the preview.
        package var encodedFrames: Int
        /// Streamed frames sent as the camera's own JPEG, not encoded again.
        package var passedThroughFrames: Int
        package var viewers: Int
        package var skippedFrames: Int
        /// Thumbnails made for the list of cameras (each a small JPEG, on demand).
        package var thumbnails: Int

        /// Creates the value from each of its properties.
        package init(capturedFrames: Int, encodedFrames: Int, passedThroughFrames: Int, viewers: Int, skippedFrames: Int, thumbnails: Int = 0) {
            self.capturedFrames = capturedFrames
            self.encodedFrames = encodedFrames
            self.passedThroughFrames = passedThroughFrames
            self.viewers = viewers
            self.skippedFrames = skippedFrames
            self.thumbnails = thumbnails
        }
    }

    package struct Failure: Encodable, Sendable {
        package let type = "error"
        package var message: String

        /// A failure saying `message`, redacted (`Redaction.redact`): errors may quote an input.
        package init(message: String) {
            self.message = Redaction.redact(message)
        }
    }

    /// One message as JSON text.
    package static func json(_ message: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding these value types cannot fail: no non-finite doubles reach them (checked at input).
        guard let data = try? encoder.encode(message) else { return #"{"type":"error","message":"encoding failed"}"# }
        return String(decoding: data, as: UTF8.self)
    }
}
