import Foundation

/// Tells a client-ID takeover loop from ordinary connection losses.
///
/// An MQTT broker closes the older of two connections that use the same client ID. Two clients
/// with one ID therefore take turns: each connects, is dropped within moments when the other
/// reconnects, and connects again. Seen from one of them: connections that end shortly after
/// they were made, again and again. This counts such short connections (`shortConnection`
/// seconds or less) within `window` seconds; at `threshold` of them an episode begins and is
/// reported once; a connection that lasts `stableAfter` seconds ends the episode.
///
/// A plain value; not thread-safe (the client's thread owns it).
struct MQTTTakeoverDetector: Sendable {
    /// What the client should say, if anything, after a connection ended.
    enum Verdict: Equatable, Sendable {
        /// Nothing new: not (or no longer) a suspected takeover, or already reported.
        case quiet
        /// A takeover loop is likely: `count` short connections within `window` seconds.
        case takeoverSuspected(count: Int)
    }

    var shortConnection: Double = 5
    var window: Double = 60
    var threshold = 3
    var stableAfter: Double = 30

    /// End times (seconds on any monotonic clock) of recent short connections.
    private var recent: [Double] = []
    /// Whether the current episode was reported.
    private(set) var inEpisode = false

    init(shortConnection: Double = 5, window: Double = 60, threshold: Int = 3, stableAfter: Double = 30) {
        self.shortConnection = shortConnection
        self.window = window
        self.threshold = threshold
        self.stableAfter = stableAfter
    }

    /// A connection that lasted `duration` seconds ended at `now`.
    mutating func connectionEnded(after duration: Double, at now: Double) -> Verdict {
        if duration >= stableAfter {
            recent = []
            inEpisode = false
            return .quiet
        }
        guard duration <= shortConnection else { return .quiet }
        recent.append(now)
        recent.removeAll { now - $0 > window }
        guard recent.count >= threshold, !inEpisode else { return .quiet }
        inEpisode = true
        return .takeoverSuspected(count: recent.count)
    }

    /// The current connection has lasted `duration` seconds: long enough ends an episode.
    /// Returns true when an episode just ended (worth a line in the log).
    mutating func connectionIsUp(for duration: Double) -> Bool {
        guard duration >= stableAfter, inEpisode || !recent.isEmpty else { return false }
        let ended = inEpisode
        recent = []
        inEpisode = false
        return ended
    }
}
