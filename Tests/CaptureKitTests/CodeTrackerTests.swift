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
