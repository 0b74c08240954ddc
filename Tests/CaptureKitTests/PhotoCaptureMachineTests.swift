@testable import CaptureKit
@testable import CaptureVision
import Testing

/// The photo output's frame decisions, driven with scripted frames and scripted device answers:
/// no session, no device, no threads.
struct PhotoCaptureMachineTests {
    /// Holds the machine so `#expect` can call its mutating members; answers nothing by itself.
    final class Driver {
        var m: Machine
        init(settle: Int = 0) { m = Machine(settleFrameCount: settle) }
        var captures: [Machine.Capture] { m.captures }
        var requestedStillFormat: CaptureDevice.Format? { m.requestedStillFormat }
        func needs(stillFormat: CaptureDevice.Format?) -> (bias: Bool, flash: Bool) { m.needs(stillFormat: stillFormat) }
        func add(_ c: Machine.Capture) { m.add(c) }
        func step(_ f: Machine.Frame, canSetBias: Bool = true, canFireFlash: Bool? = nil) -> [Machine.Action] {
            m.step(f, canSetBias: canSetBias, canFireFlash: canFireFlash, flashFrameLimit: 3)
        }
        func flashFired(at t: MediaTime) { m.flashFired(at: t) }
        func flashFailed(_ e: CaptureError, stillFormat: CaptureDevice.Format?) -> [Machine.Action] {
            m.flashFailed(e, stillFormat: stillFormat)
        }
        func biasSet(for id: Machine.ID, lateFrames: Int) { m.biasSet(for: id, lateFrames: lateFrames) }
        func biasFailed(for id: Machine.ID, _ e: CaptureError) -> [Machine.Action] { m.biasFailed(for: id, e) }
        func releaseFlash(force: Bool) -> Bool { m.releaseFlash(force: force) }
        func stillFrameArrived() -> Bool { m.stillFrameArrived() }
        func isStillFormatDone(_ f: CaptureDevice.Format) -> Bool { m.isStillFormatDone(f) }
        func removeAll(stillFormat: CaptureDevice.Format) -> [Machine.ID] { m.removeAll(stillFormat: stillFormat) }
        func removeAll() -> [Machine.ID] { m.removeAll() }
    }

    typealias Machine = PhotoCaptureMachine

    static let still = CaptureDevice.Format(
        mediaSubType: "MJPG", pixelFormat: .bgr, dimensions: .init(width: 1280, height: 720),
        videoSupportedFrameRateRanges: [])

    /// A frame of the active format (or `still`) at `time` ms with sequence number `sequence`.
    static func frame(_ sequence: UInt64, at time: Int64 = 0, still: CaptureDevice.Format? = nil) -> Machine.Frame {
        Machine.Frame(time: MediaTime(value: time, timescale: 1000), sequence: sequence, stillFormat: still)
    }

    @Test func aSingleShotTakesTheNextFrameOfItsFormat() {
        let m = Driver()
        m.add(.init(id: 1))
        m.add(.init(id: 2, stillFormat: Self.still))
        #expect(m.requestedStillFormat == Self.still)
        #expect(m.step(Self.frame(7)) == [.announce(1), .take(1, bias: nil), .complete(1)])
        #expect(m.captures.map(\.id) == [2])
        #expect(m.step(Self.frame(8)) == [])
        #expect(m.step(Self.frame(1, still: Self.still)) == [.announce(2), .take(2, bias: nil), .complete(2)])
        #expect(m.captures.isEmpty)
        #expect(m.requestedStillFormat == nil)
    }

    @Test func flashFiresOnceAndWaitsForAFrameExposedAfterIt() {
        let m = Driver()
        m.add(.init(id: 1, wantsFlash: true))
        m.add(.init(id: 2, wantsFlash: true))
        m.add(.init(id: 3))
        #expect(m.needs(stillFormat: nil) == (bias: false, flash: true))
        // One flash for both flash captures; the plain one does not wait for it.
        #expect(
            m.step(Self.frame(1, at: 100), canFireFlash: true)
                == [.fireFlash, .announce(3), .take(3, bias: nil), .complete(3)])
        m.flashFired(at: MediaTime(value: 150, timescale: 1000))
        #expect(m.step(Self.frame(2, at: 149), canFireFlash: true) == [])  // exposed before the flash
        #expect(!m.releaseFlash(force: false))  // still wanted
        #expect(
            m.step(Self.frame(3, at: 150), canFireFlash: true)
                == [.announce(1), .take(1, bias: nil), .complete(1), .announce(2), .take(2, bias: nil), .complete(2)])
        #expect(m.releaseFlash(force: false))
        #expect(!m.releaseFlash(force: true))  // already put back
    }

    @Test func flashGivesUpWaitingAfterFramesInFlightPlusOne() {
        let m = Driver()
        m.add(.init(id: 1, wantsFlash: true))
        #expect(m.step(Self.frame(1, at: 0), canFireFlash: true) == [.fireFlash])
        // Frame times on another clock: never after the flash.
        m.flashFired(at: MediaTime(value: 1_000_000, timescale: 1000))
        for sequence in UInt64(2)...4 {
            #expect(m.step(Self.frame(sequence), canFireFlash: true) == [], "frame \(sequence)")
        }
        #expect(m.step(Self.frame(5), canFireFlash: true) == [.announce(1), .take(1, bias: nil), .complete(1)])
    }

    @Test func aFlashThatFailsFailsOnlyTheFlashCapturesOfThatFormat() {
        let m = Driver()
        m.add(.init(id: 1, wantsFlash: true))
        m.add(.init(id: 2, stillFormat: Self.still, wantsFlash: true))
        #expect(m.step(Self.frame(1), canFireFlash: true) == [.fireFlash])
        let eio = CaptureError(.deviceFailure, "strobe failed")
        #expect(m.flashFailed(eio, stillFormat: nil) == [.fail(1, eio)])
        #expect(m.captures.map(\.id) == [2])
        #expect(!m.releaseFlash(force: true))  // it never fired
        // A device without a flash fails it at once; one not asked waits a frame.
        #expect(m.step(Self.frame(1, still: Self.still), canFireFlash: nil) == [])
        let lost = m.step(Self.frame(2, still: Self.still), canFireFlash: false)
        #expect(lost.count == 1)
        guard case .fail(2, let error) = lost.first else { Issue.record("expected a failure, got \(lost)"); return }
        #expect(error.code == .unsupported)
        #expect(m.captures.isEmpty)
    }

    @Test func bracketsStepTheBiasAndSkipFramesAtTheOldExposure() {
        let m = Driver()
        m.add(.init(id: 1, brackets: [-1, 0, 1]))
        #expect(m.needs(stillFormat: nil) == (bias: true, flash: false))
        #expect(m.step(Self.frame(10)) == [.announce(1), .setBias(-1, for: 1)])
        m.biasSet(for: 1, lateFrames: 2)  // frames 11 and 12 were exposed before the change
        #expect(m.step(Self.frame(11)) == [])
        #expect(m.step(Self.frame(12)) == [])
        #expect(m.step(Self.frame(13)) == [.take(1, bias: -1), .setBias(0, for: 1)])
        m.biasSet(for: 1, lateFrames: 0)
        // A dropped frame (15 after 13) still counts as past the wait.
        #expect(m.step(Self.frame(15)) == [.take(1, bias: 0), .setBias(1, for: 1)])
        m.biasSet(for: 1, lateFrames: 1)
        #expect(m.step(Self.frame(16)) == [])
        #expect(m.step(Self.frame(17)) == [.take(1, bias: 1), .resetBias, .complete(1)])
        #expect(m.captures.isEmpty)
    }

    @Test func aBracketWaitsForTheDeviceToAnswerItsBiasRequest() {
        let m = Driver()
        m.add(.init(id: 1, brackets: [1, 2]))
        #expect(m.step(Self.frame(1)) == [.announce(1), .setBias(1, for: 1)])
        // No answer yet: neither a second request nor a frame taken.
        #expect(m.step(Self.frame(2)) == [])
        m.biasSet(for: 1, lateFrames: 0)  // counts from the frame that asked (1)
        #expect(m.step(Self.frame(3)) == [.take(1, bias: 1), .setBias(2, for: 1)])
    }

    @Test func biasErrorsFailTheirBracketOnly() {
        let m = Driver()
        m.add(.init(id: 1, brackets: [-1, 1]))
        m.add(.init(id: 2, brackets: [0]))
        m.add(.init(id: 3))
        #expect(
            m.step(Self.frame(1))
                == [
                    .announce(1), .setBias(-1, for: 1), .announce(2), .setBias(0, for: 2),
                    .announce(3), .take(3, bias: nil), .complete(3),
                ])
        let busy = CaptureError(.deviceBusy, "control busy")
        #expect(m.biasFailed(for: 1, busy) == [.fail(1, busy)])
        m.biasSet(for: 2, lateFrames: 0)
        #expect(m.captures.map(\.id) == [2])
        // Exposure control gone: the started bracket fails instead of taking its frame.
        let actions = m.step(Self.frame(2), canSetBias: false)
        guard case .fail(2, let error) = actions.first, actions.count == 1 else {
            Issue.record("expected one failure, got \(actions)")
            return
        }
        #expect(error.code == .unsupported)
        #expect(m.captures.isEmpty)
    }

    @Test func aStillFormatSkipsItsSettleFramesAndEndsWithItsCaptures() {
        let m = Driver(settle: 2)
        m.add(.init(id: 1, stillFormat: Self.still))
        m.add(.init(id: 2, stillFormat: Self.still))
        #expect(!m.stillFrameArrived())
        #expect(!m.stillFrameArrived())
        #expect(!m.isStillFormatDone(Self.still))
        #expect(m.stillFrameArrived())
        #expect(m.removeAll(stillFormat: Self.still) == [1, 2])
        #expect(m.isStillFormatDone(Self.still))
        // The next switch settles again.
        m.add(.init(id: 3, stillFormat: Self.still))
        #expect(!m.stillFrameArrived())
        #expect(!m.stillFrameArrived())
        #expect(m.stillFrameArrived())
        #expect(m.step(Self.frame(9, still: Self.still)) == [.announce(3), .take(3, bias: nil), .complete(3)])
        #expect(m.isStillFormatDone(Self.still))
        #expect(!m.stillFrameArrived())  // counting restarted
    }

    @Test func stoppingDropsEveryCaptureOldestFirstAndReleasesTheFlash() {
        let m = Driver()
        m.add(.init(id: 5, wantsFlash: true))
        m.add(.init(id: 4, stillFormat: Self.still))
        m.add(.init(id: 6, brackets: [1]))
        _ = m.step(Self.frame(1), canFireFlash: true)
        m.flashFired(at: .zero)
        #expect(!m.releaseFlash(force: false))
        #expect(m.removeAll() == [5, 4, 6])
        #expect(m.captures.isEmpty)
        #expect(m.releaseFlash(force: true))
    }
}
