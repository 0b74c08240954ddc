import Foundation
import Testing

@testable import CaptureKit
@testable import CaptureVision

private func code(_ text: String, x: Double = 0.4) -> MetadataMachineReadableCodeObject {
    let bounds = CGRect(x: x, y: 0.4, width: 0.2, height: 0.2)
    return MetadataMachineReadableCodeObject(
        type: .qr, bounds: bounds, stringValue: text, payload: Array(text.utf8), corners: [], quality: 1,
        time: .zero, inputID: CaptureInput.ID(rawValue: 1))
}

private func at(_ seconds: Double) -> MediaTime { MediaTime(seconds: seconds) }

@Suite struct CodeTrackerTests {
    @Test func deliveredOncePerAppearance() {
        var tracker = CodeTracker(repeatInterval: nil)
        var delivered = 0
        for i in 0..<90 { delivered += tracker.update([code("a")], at: at(Double(i) / 30)).count }
        #expect(delivered == 1)
    }

    @Test func repeatIntervalIsHonoured() {
        var tracker = CodeTracker(repeatInterval: 1.0)
        var times: [Double] = []
        for i in 0..<100 {  // 0 … 3.3 s at 30 fps
            let t = Double(i) / 30
            if !tracker.update([code("a")], at: at(t)).isEmpty { times.append(t) }
        }
        #expect(times.count == 4)
        #expect(times.first == 0)
        for (a, b) in zip(times, times.dropFirst()) { #expect(b - a >= 1.0 && b - a < 1.0 + 1.0 / 30 + 1e-9) }
    }

    @Test func leavingAndReturningIsANewAppearance() {
        var tracker = CodeTracker(repeatInterval: nil, gracePeriod: 0.3)
        #expect(tracker.update([code("a")], at: at(0)).count == 1)
        // A brief miss (within the grace period) is the same appearance.
        #expect(tracker.update([], at: at(0.1)).isEmpty)
        #expect(tracker.update([code("a")], at: at(0.2)).isEmpty)
        // Gone for longer than the grace period, then back: delivered again.
        #expect(tracker.update([], at: at(0.4)).isEmpty)
        #expect(tracker.update([], at: at(0.8)).isEmpty)
        #expect(tracker.update([code("a")], at: at(0.9)).count == 1)
    }

    @Test func samePayloadElsewhereIsAnotherCode() {
        var tracker = CodeTracker(repeatInterval: nil)
        #expect(tracker.update([code("a", x: 0.0)], at: at(0)).count == 1)
        #expect(tracker.update([code("a", x: 0.0), code("a", x: 0.7)], at: at(0.1)).count == 1)
        #expect(tracker.update([code("a", x: 0.0), code("a", x: 0.7), code("b")], at: at(0.2)).count == 1)
    }
}

/// The code `leave` change: reported once per appearance, after the grace period, with the code
/// as last seen; `finish` lets every code in view leave.
@Suite struct CodeTrackerLeaveTests {
    @Test func aCodeGoneLongerThanTheGracePeriodLeavesOnce() {
        var tracker = CodeTracker(repeatInterval: 1, gracePeriod: 0.5)
        var log: [(String, Double)] = []
        // In view 0…1.0 s (last sighting at x 0.45), then gone until 3 s.
        for i in 0..<90 {
            let t = Double(i) / 30
            let seen = t <= 1.0 ? [code("a", x: 0.4 + 0.05 * t)] : []
            for change in tracker.changes(seen, at: at(t)) {
                switch change {
                case .appeared(let c): log.append(("appear", c.bounds.minX))
                case .repeated(let c): log.append(("repeat", c.bounds.minX))
                case .left(let c): log.append(("leave \(String(format: "%.3f", t))", c.bounds.minX))
                }
            }
        }
        #expect(log.map(\.0) == ["appear", "repeat", "leave 1.533"], "\(log)")
        #expect(abs((log.last?.1 ?? 0) - 0.45) < 1e-9)
    }

    @Test func aBriefMissIsNotALeave() {
        var tracker = CodeTracker(repeatInterval: nil, gracePeriod: 0.5)
        var names: [String] = []
        for i in 0..<60 {
            let t = Double(i) / 30
            // Missed for 0.3 s in the middle: still the same appearance.
            let seen = (0.8..<1.1).contains(t) ? [] : [code("a")]
            for change in tracker.changes(seen, at: at(t)) {
                if case .left = change { names.append("leave") } else { names.append("other") }
            }
        }
        #expect(names == ["other"])
    }

    @Test func finishLetsEveryCodeInViewLeaveAndForgetsThem() {
        var tracker = CodeTracker()
        _ = tracker.changes([code("a", x: 0.1), code("b", x: 0.6)], at: at(0))
        let left = tracker.finish()
        #expect(left.compactMap(\.stringValue) == ["a", "b"])
        #expect(tracker.finish().isEmpty)
        // After finish the same code is a new appearance.
        let again = tracker.changes([code("a", x: 0.1)], at: at(0.1))
        #expect(again.count == 1)
        if case .appeared = again.first { } else { Issue.record("expected a new appearance, got \(again)") }
        // The delivery view leaves the leaves out.
        var other = CodeTracker(gracePeriod: 0.1)
        _ = other.deliveries([code("a")], at: at(0))
        #expect(other.deliveries([], at: at(1)).isEmpty)
    }
}
