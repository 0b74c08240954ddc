import CaptureKit
import Foundation

/// The preview's WebSocket protocol: JSON text messages, one object each, with a `type`.
///
/// In (page → server): `view` (width, height, gravity), `connection` (rotation, mirrored),
/// `tap` (x, y), `drag` (x, y, width, height), `resetRectOfInterest`, `photo`.
/// Out (server → page): `geometry` (layer-space faces, codes, the frame's rect and the rect of
/// interest), `tap` (the device point and which of focus and exposure took it), `photo`,
/// `event`, `stats`, `error`. Every coordinate out is computed by `CaptureVideoPreviewLayer`;
/// the page draws the numbers as they come.
///
/// Value types; thread-safe.
enum PreviewMessage {
    /// A message from the page. One flat shape: which fields matter depends on `type`, and
    /// `PreviewSocket` checks that they are there and finite.
    struct Incoming: Decodable, Sendable {
        enum Kind: String, Decodable, Sendable {
            case view, connection, tap, drag, resetRectOfInterest, photo
        }
        var type: Kind
        var width: Double?
        var height: Double?
        var gravity: String?
        var rotation: Double?
        var mirrored: Bool?
        var x: Double?
        var y: Double?
    }

    struct Rect: Encodable, Sendable, Equatable {
        var x: Double, y: Double, width: Double, height: Double
        init(_ r: CGRect) {
            x = Double(r.minX)
            y = Double(r.minY)
            width = Double(r.width)
            height = Double(r.height)
        }
    }

    struct Point: Encodable, Sendable, Equatable {
        var x: Double, y: Double
        init(_ p: CGPoint) {
            x = Double(p.x)
            y = Double(p.y)
        }
    }

    struct Face: Encodable, Sendable {
        var faceID: Int
        var score: Double
        /// Layer space (`transformedMetadataObject(for:)`).
        var bounds: Rect
        /// Device space, as the metadata output delivered it (what `bounds` was converted from).
        var deviceBounds: Rect
    }

    struct Code: Encodable, Sendable {
        var kind: String
        /// The payload as text, or `bytes:` and base64 when it is not UTF-8. Untrusted: the page
        /// shows it through `textContent` only.
        var text: String
        /// Layer space, in the code's own corner order (`transformedMetadataObject(for:)`).
        var corners: [Point]
        var deviceBounds: Rect
    }

    /// Everything the overlay draws, for one view.
    struct Geometry: Encodable, Sendable {
        let type = "geometry"
        /// Counts metadata updates (a new frame's faces, a code appearing or leaving).
        var sequence: Int
        var viewWidth: Double
        var viewHeight: Double
        var gravity: String
        var rotation: Double
        var mirrored: Bool
        /// Where the whole frame lands (`layerRectConverted` of the unit rect): the page places
        /// the video image there.
        var video: Rect
        var faces: [Face]
        var codes: [Code]
        /// The metadata output's `rectOfInterest`, in layer space and as set (device space).
        var rectOfInterest: Rect
        var deviceRectOfInterest: Rect
    }

    struct TapResult: Encodable, Sendable {
        let type = "tap"
        var layerPoint: Point
        /// `captureDevicePointConverted(fromLayerPoint:)`.
        var devicePoint: Point
        /// Whether the camera took the point as its focus or exposure point of interest (either).
        var pointOfInterestSet: Bool
        /// Whether it became the focus point of interest, with a focus operation started.
        var focusPointOfInterestSet: Bool
        /// Whether it became the exposure point of interest, with auto exposure on it.
        var exposurePointOfInterestSet: Bool
        var message: String

        init(layerPoint: Point, devicePoint: Point, focusSet: Bool, exposureSet: Bool, message: String) {
            self.layerPoint = layerPoint
            self.devicePoint = devicePoint
            pointOfInterestSet = focusSet || exposureSet
            focusPointOfInterestSet = focusSet
            exposurePointOfInterestSet = exposureSet
            self.message = message
        }
    }

    struct Photo: Encodable, Sendable {
        let type = "photo"
        var url: String
        var width: Int
        var height: Int
        var bytes: Int
    }

    struct Event: Encodable, Sendable {
        let type = "event"
        /// Seconds of media time.
        var time: Double
        var text: String
    }

    struct Stats: Encodable, Sendable {
        let type = "stats"
        var capturedFrames: Int
        /// Streamed frames encoded by the preview.
        var encodedFrames: Int
        /// Streamed frames sent as the camera's own JPEG, not encoded again.
        var passedThroughFrames: Int
        var viewers: Int
        var skippedFrames: Int
    }

    struct Failure: Encodable, Sendable {
        let type = "error"
        var message: String
    }

    /// One message as JSON text.
    static func json(_ message: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding these value types cannot fail: no non-finite doubles reach them (checked at input).
        guard let data = try? encoder.encode(message) else { return #"{"type":"error","message":"encoding failed"}"# }
        return String(decoding: data, as: UTF8.self)
    }
}
