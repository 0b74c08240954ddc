import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
@testable import CVCamCommands
import AppTestSupport

/// Absurd numbers that never reach the command line: the status line's rate. Numbers from the
/// command line and `synthetic:` keys are rows of `BadInputTableTests` (issue #17, class 1).
@Suite struct NumericBoundaryTests {
    /// The status line's ETA from a rate near zero, infinite or NaN.
    @Test(arguments: [1e-300, .leastNonzeroMagnitude, .infinity, .nan, -1.0])
    func progressWithAnAbsurdRateDoesNotTrap(_ rate: Double) {
        #expect(StatusLine.progress(done: 1, total: 10, perSecond: rate).hasPrefix("[##"))
    }
}
