import Foundation

/// Decides which detected codes to deliver, so a code held in front of the camera is reported
/// once per appearance instead of on every frame. Pure logic on detections and timestamps.
///
/// - A code is keyed by (type, payload) and position: the same payload at a far-away place
///   (centres further apart than `maximumJump` in device space) is another code.
/// - A new appearance is delivered at once. While it stays in view it is delivered again every
///   `repeatInterval` (nil: never; ZBar's own cache uses a fixed 2 s).
/// - A code missing for more than `gracePeriod` has left; when it returns it is a new appearance.
///
/// Threading: not thread-safe; feed it from one queue (the metadata output's).
public struct CodeTracker: Sendable {
    /// Seconds between repeated deliveries of a code that stays in view; nil never repeats.
    public var repeatInterval: Double?
    /// Seconds a code may be missed (blur, occlusion, a failed decode) and still count as present.
    public var gracePeriod: Double
    /// Largest movement of a code's centre, in device space, between sightings of one appearance.
    public var maximumJump: Double

    private struct Track: Sendable {
        var type: MetadataObjectType
        var payload: [UInt8]
        var center: CGPoint
        var lastSeen: Double
        var lastDelivered: Double
    }
    private var tracks: [Track] = []

    /// Creates a tracker (defaults: repeat every 2 s like ZBar, 0.5 s grace, 0.25 jump).
    public init(repeatInterval: Double? = 2, gracePeriod: Double = 0.5, maximumJump: Double = 0.25) {
        self.repeatInterval = repeatInterval
        self.gracePeriod = gracePeriod
        self.maximumJump = maximumJump
    }

    /// Feeds one frame's detections, taken at `time`; returns those to deliver now.
    public mutating func update(_ codes: [MetadataMachineReadableCodeObject], at time: MediaTime)
        -> [MetadataMachineReadableCodeObject]
    {
        let t = time.seconds
        // Forget codes that have been gone longer than the grace period.
        tracks.removeAll { t - $0.lastSeen > gracePeriod }
        var deliver: [MetadataMachineReadableCodeObject] = []
        var matched = Set<Int>()
        for code in codes {
            let c = CGPoint(x: code.bounds.midX, y: code.bounds.midY)
            let candidates = tracks.indices.filter { i in
                !matched.contains(i) && tracks[i].type == code.type && tracks[i].payload == code.payload
                    && hypot(Double(tracks[i].center.x - c.x), Double(tracks[i].center.y - c.y)) <= maximumJump
            }
            let nearest = candidates.min { a, b in
                hypot(Double(tracks[a].center.x - c.x), Double(tracks[a].center.y - c.y))
                    < hypot(Double(tracks[b].center.x - c.x), Double(tracks[b].center.y - c.y))
            }
            if let i = nearest {
                matched.insert(i)
                tracks[i].center = c
                tracks[i].lastSeen = t
                if let interval = repeatInterval, t - tracks[i].lastDelivered >= interval {
                    tracks[i].lastDelivered = t
                    deliver.append(code)
                }
            } else {
                tracks.append(Track(type: code.type, payload: code.payload, center: c, lastSeen: t, lastDelivered: t))
                matched.insert(tracks.count - 1)
                deliver.append(code)
            }
        }
        return deliver
    }

    /// Forgets every code (the next sighting of each is a new appearance).
    public mutating func reset() { tracks.removeAll() }
}
