@testable import CaptureKit
@testable import CaptureVision
import Testing

/// MediaTime is total: no number from a user, a file or a driver can trap it (issue #17, class 1).
@Suite struct MediaTimeTotalityTests {
    static let absurd: [Double] = [.infinity, -.infinity, .nan, 1e300, -1e300, -1, 0, -0.0, 1e-300, 1 / 4e9, 4e9, .greatestFiniteMagnitude]

    @Test(arguments: absurd) func secondsSaturate(_ seconds: Double) {
        let t = MediaTime(seconds: seconds)
        #expect(t.timescale > 0)
        if seconds.isNaN { #expect(t == .zero) }
        if seconds >= 1e300 { #expect(t.value == .max) }
        if seconds <= -1e300 { #expect(t.value == .min) }
        if seconds == -1 { #expect(t.seconds == -1) }
    }

    @Test(arguments: absurd) func frameRatesClamp(_ fps: Double) {
        let d = MediaTime.frameDuration(framesPerSecond: fps)
        #expect(d.value > 0 && d.timescale > 0)
        #expect(MediaTime.frameRateLimits.contains(d.framesPerSecond.rounded()) || d.framesPerSecond < 1)
        _ = d.multiplied(by: .max)
    }

    @Test func commonRatesStayExact() {
        #expect(MediaTime.frameDuration(framesPerSecond: 30) == MediaTime(value: 1, timescale: 30))
        #expect(MediaTime.frameDuration(framesPerSecond: 30000.0 / 1001) == MediaTime(value: 1001, timescale: 30000))
        // A header declaring a 1/4e9 s frame (4 GHz) is clamped to the fastest rate, not a trap.
        #expect(MediaTime.frameDuration(framesPerSecond: 4e9) == MediaTime(value: 1, timescale: 1_000_000))
    }

    @Test func badTimescalesAndOverflowSaturate() {
        #expect(MediaTime(value: 5, timescale: 0).value == .max)
        #expect(MediaTime(value: -5, timescale: 0).value == .min)
        #expect(MediaTime(value: 3, timescale: -2) == MediaTime(value: -3, timescale: 2))
        #expect(MediaTime(value: .min, timescale: .min).value == .max)
        #expect(MediaTime(seconds: 1, preferredTimescale: -7).timescale > 0)
        #expect(MediaTime(value: .max / 2, timescale: 1).multiplied(by: 3).value == .max)
        #expect(MediaTime(value: .max / 2, timescale: 1).multiplied(by: -3).value == .min)
        #expect(MediaTime(value: 2, timescale: 1).multiplied(by: 4) == MediaTime(value: 8, timescale: 1))
    }
}
