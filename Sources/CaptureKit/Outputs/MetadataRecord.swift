import Foundation

/// The JSON pieces shared by the record stored with photos (`PhotoAnnotation`) and cvcam's
/// NDJSON events, so a box or a face reads the same wherever it is written. They live in the
/// library because the photo output writes its record itself.
///
/// Numbers are rounded when a record is made: the JSON stays short and stable, and decodes back
/// to an equal value. Value types; thread-safe.
public enum MetadataRecord {
    /// `value` rounded to `places` decimals.
    public static func rounded(_ value: Double, _ places: Int) -> Double {
        let scale = pow(10, Double(places))
        return (value * scale).rounded() / scale
    }

    /// A rectangle as `{"x", "y", "w", "h"}`: device space (0…1, top-left origin) or, for
    /// `--view`, view points.
    public struct Box: Codable, Hashable, Sendable {
        public var x: Double
        public var y: Double
        public var w: Double
        public var h: Double

        /// A box with the given (already rounded) values.
        public init(x: Double, y: Double, w: Double, h: Double) {
            self.x = x
            self.y = y
            self.w = w
            self.h = h
        }

        /// `rect` rounded to `places` decimals (4 for device space, 1 for view points).
        public init(_ rect: CGRect, places: Int = 4) {
            self.init(
                x: rounded(rect.minX, places), y: rounded(rect.minY, places), w: rounded(rect.width, places),
                h: rounded(rect.height, places))
        }

        /// The box as a rectangle.
        public var rect: CGRect { CGRect(x: x, y: y, width: w, height: h) }
    }

    /// Points as `[[x, y], …]`, device space, rounded to 4 decimals.
    public static func points(_ points: [CGPoint]) -> [[Double]] {
        points.map { [rounded($0.x, 4), rounded($0.y, 4)] }
    }

    /// One face: `faceID`, `box`, `score` (0…1), `roll`/`yaw` in degrees when known, and
    /// `landmarks` when the detector gives them.
    public struct Face: Codable, Hashable, Sendable {
        /// The tracker's faceID.
        public var faceID: Int
        /// Bounding box in device space.
        public var box: Box
        /// The detector's confidence, 0…1, 3 decimals.
        public var score: Double
        /// Roll in degrees (1 decimal), when known.
        public var roll: Double?
        /// Yaw in degrees (1 decimal), when known.
        public var yaw: Double?
        /// Right eye, left eye, nose, right and left mouth corner; nil when the detector has none.
        public var landmarks: [[Double]]?

        /// The record of a face object.
        public init(_ face: MetadataFaceObject) {
            faceID = face.faceID
            box = Box(face.bounds)
            score = rounded(face.confidence, 3)
            roll = face.hasRollAngle ? rounded(face.rollAngle, 1) : nil
            yaw = face.hasYawAngle ? rounded(face.yawAngle, 1) : nil
            landmarks = face.landmarks.isEmpty ? nil : points(face.landmarks)
        }
    }
}
