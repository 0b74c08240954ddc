import Foundation

/// Decides which detected codes to deliver, so a code held in front of the camera is reported
/// once per appearance instead of on every frame. Pure logic on detections and timestamps.
///
/// - A code is keyed by (type, payload) and position: the same payload at a far-away place
///   (centres further apart than `maximumJump` in device space) is another code.
/// - A new appearance is delivered at once. While it stays in view it is delivered again every
///   `repeatInterval` (nil: never; ZBar's own cache uses a fixed 2 s).
/// - A code missing for more than `gracePeriod` has left: the first frame after that reports it
///   (`Change.left`, with the code as last seen), and when it returns it is a new appearance.
///   `finish()` reports every code still in view as left (the stream ended).
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
        /// The code as last seen, for its `left` change.
        var last: MetadataMachineReadableCodeObject
    }

    /// What one frame changed about a code.
    public enum Change: Sendable {
        /// A new appearance.
        case appeared(MetadataMachineReadableCodeObject)
        /// Still in view, `repeatInterval` after the last delivery.
        case repeated(MetadataMachineReadableCodeObject)
        /// Gone for more than `gracePeriod`; the code as last seen.
        case left(MetadataMachineReadableCodeObject)
    }
    private var tracks: [Track] = []
    /// The time of the last `changes` (or of the stillness it was carried to).
    private var lastUpdate: Double?

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
        deliveries(codes, at: time).map(\.code)
    }

    /// Like `update(_:at:)`, telling a new appearance from a repeat of a code still in view.
    public mutating func deliveries(_ codes: [MetadataMachineReadableCodeObject], at time: MediaTime)
        -> [(code: MetadataMachineReadableCodeObject, isNewAppearance: Bool)]
    {
        changes(codes, at: time).compactMap { change in
            switch change {
            case .appeared(let code): (code, true)
            case .repeated(let code): (code, false)
            case .left: nil
            }
        }
    }

    /// Feeds one frame's detections, taken at `time`; returns the codes that left (first), then
    /// the appearances and repeats due now.
    public mutating func changes(_ codes: [MetadataMachineReadableCodeObject], at time: MediaTime) -> [Change] {
        let t = time.seconds
        lastUpdate = t
        // Codes gone longer than the grace period have left.
        var changes: [Change] = tracks.filter { t - $0.lastSeen > gracePeriod }.map { .left($0.last) }
        tracks.removeAll { t - $0.lastSeen > gracePeriod }
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
                tracks[i].last = code
                if let interval = repeatInterval, t - tracks[i].lastDelivered >= interval {
                    tracks[i].lastDelivered = t
                    changes.append(.repeated(code))
                }
            } else {
                tracks.append(
                    Track(type: code.type, payload: code.payload, center: c, lastSeen: t, lastDelivered: t, last: code))
                matched.insert(tracks.count - 1)
                changes.append(.appeared(code))
            }
        }
        return changes
    }

    /// The frames after the last update up to `time` were not analysed because nothing moved in
    /// them (motion gating, `AnalysisFrame.stillThrough`): that span does not count towards
    /// `gracePeriod`, so a code that stays still in view is not taken for gone between two idle
    /// analyses. Repeats keep their own clock (`repeatInterval` of frame time).
    public mutating func sceneWasStill(through time: MediaTime) {
        guard let last = lastUpdate else { return }
        let gap = time.seconds - last
        guard gap > 0 else { return }
        for i in tracks.indices { tracks[i].lastSeen += gap }
        lastUpdate = time.seconds
    }

    /// The stream ended: every code in view leaves (returned as last seen, oldest appearance
    /// first) and is forgotten.
    public mutating func finish() -> [MetadataMachineReadableCodeObject] {
        defer {
            tracks.removeAll()
            lastUpdate = nil
        }
        return tracks.map(\.last)
    }

    /// Forgets every code (the next sighting of each is a new appearance).
    public mutating func reset() {
        tracks.removeAll()
        lastUpdate = nil
    }
}
