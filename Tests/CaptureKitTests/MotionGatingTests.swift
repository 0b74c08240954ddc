import CaptureKitTesting
import Foundation
import Synchronization
import Testing

@testable import CaptureKit

/// A code stage that finds nothing and records the time of every frame it was given: what the
/// detectors analysed under motion gating.
final class AnalysedFrameLog: CodeMetadataStage {
    private let times = Mutex<[Double]>([])
    var analysed: [Double] { times.withLock { $0 } }
    var availableTypes: [MetadataObjectType] { [.qr] }
    func process(_ frame: AnalysisFrame, types: Set<MetadataObjectType>, regionOfInterest: CGRect, repeatInterval: Double)
        throws(CaptureError) -> (codes: [MetadataMachineReadableCodeObject], events: [MetadataEvent])
    {
        times.withLock { $0.append((frame.time.seconds * 1000).rounded() / 1000) }
        return ([], [])
    }
    func finish() -> [MetadataEvent] { [] }
}

/// Frame times on a 10 fps clock, in tenths, so that they compare exactly.
private func tenths(_ times: [Double]) -> [Int] { times.map { Int(($0 * 10).rounded()) } }

/// The gate's policy alone: pure logic over motion results and frame times.
@Suite struct MotionGateTests {
    let input = CaptureInput.ID(rawValue: 1)
    static let still = MotionDetector.Result(regions: [], changedFraction: 0, isGlobalChange: false, isFirstFrame: false)
    static let moving = MotionDetector.Result(
        regions: [CGRect(x: 0.2, y: 0.2, width: 0.1, height: 0.1)], changedFraction: 0.01, isGlobalChange: false, isFirstFrame: false)

    func time(_ tenth: Int) -> MediaTime { MediaTime(value: Int64(tenth), timescale: 10) }

    @Test func stillFramesAreAnalysedAtTheIdleRateAndMotionAtOnce() {
        var gate = MotionGate(endDelay: 1, idleAnalysisInterval: 2)
        var analysed: [Int] = []
        var events: [(Int, String)] = []
        for t in 0..<100 {
            let moves = (50..<60).contains(t)
            let d = gate.decide(moves ? Self.moving : Self.still, at: time(t), inputID: input)
            if d.analyse { analysed.append(t) }
            events += d.events.map { (t, $0.name) }
            if moves { #expect(d.analyse && d.motion != nil, "frame \(t)") }
        }
        // 0 (first), every 2 s while still; 5.0 … 6.8 (motion and its 1 s end delay); then every 2 s again.
        #expect(analysed == [0, 20, 40] + Array(50..<69) + [88], "\(analysed)")
        // Ends 1 s after the last frame that moved (5.9 → 6.9); the event carries that last frame.
        #expect(events.map(\.0) == [50, 69] && events.map(\.1) == ["start", "end"])
    }

    @Test func anAnalysedFrameAfterWithheldOnesSaysUntilWhenTheSceneWasStill() {
        var gate = MotionGate(endDelay: 1, idleAnalysisInterval: 2)
        var still: [Int: Int] = [:]
        for t in 0..<45 {
            let d = gate.decide(Self.still, at: time(t), inputID: input)
            if d.analyse, let through = d.stillThrough { still[t] = Int(through.value) }
        }
        #expect(still == [20: 19, 40: 39])
    }

    @Test func aGlobalChangeIsAnalysedOnceAndStartsNoMotion() {
        var gate = MotionGate(endDelay: 1, idleAnalysisInterval: 2)
        _ = gate.decide(Self.still, at: time(0), inputID: input)
        let global = MotionDetector.Result(regions: [], changedFraction: 0.9, isGlobalChange: true, isFirstFrame: false)
        let d = gate.decide(global, at: time(7), inputID: input)
        #expect(d.analyse && d.events.isEmpty)
        #expect(!gate.decide(Self.still, at: time(8), inputID: input).analyse)
    }

    @Test func anIdleIntervalOfZeroAnalysesEveryFrameAndFinishEndsAnActiveMotion() {
        var gate = MotionGate(endDelay: 1, idleAnalysisInterval: 0)
        #expect((0..<10).allSatisfy { gate.decide(Self.still, at: time($0), inputID: input).analyse })
        _ = gate.decide(Self.moving, at: time(10), inputID: input)
        #expect(gate.finish().map(\.name) == ["end"])
        #expect(gate.finish().isEmpty)
    }
}

/// The trackers across the frames motion gating spares: an object that stays still is not
/// taken for gone between two idle analyses.
@Suite struct StillSceneTrackingTests {
    let input = CaptureInput.ID(rawValue: 1)

    func code(at t: Double) -> MetadataMachineReadableCodeObject {
        MetadataMachineReadableCodeObject(
            type: .qr, bounds: CGRect(x: 0.4, y: 0.4, width: 0.2, height: 0.2), stringValue: "door", payload: Array("door".utf8),
            corners: [], quality: 1, time: MediaTime(seconds: t), inputID: input)
    }

    @Test func aStillCodeSeenEveryTwoSecondsStaysOneAppearance() {
        var flapping = CodeTracker(repeatInterval: 2)
        var held = CodeTracker(repeatInterval: 2)
        var flapNames: [String] = [], heldNames: [String] = []
        for t in [0.0, 2.0, 4.0, 6.0] {
            flapNames += flapping.changes([code(at: t)], at: MediaTime(seconds: t)).map(Self.name)
            if t > 0 { held.sceneWasStill(through: MediaTime(seconds: t - 0.1)) }
            heldNames += held.changes([code(at: t)], at: MediaTime(seconds: t)).map(Self.name)
        }
        // Without being told the frames between were still, the code leaves and appears again.
        #expect(flapNames == ["appear", "leave", "appear", "leave", "appear", "leave", "appear"])
        #expect(heldNames == ["appear", "repeat", "repeat", "repeat"])
        // A code that really went stays gone: a frame analysed without it, after the grace period, says so.
        held.sceneWasStill(through: MediaTime(seconds: 7.9))
        #expect(held.changes([], at: MediaTime(seconds: 8.0)).map(Self.name) == [])
        #expect(held.changes([], at: MediaTime(seconds: 8.6)).map(Self.name) == ["leave"])
    }

    @Test func aFaceStandingStillKeepsItsIDThroughIdleAnalyses() {
        let detection = FaceDetection(
            bounds: CGRect(x: 0.4, y: 0.3, width: 0.15, height: 0.2), landmarks: [], confidence: 0.9, rollAngle: nil, yawAngle: nil)
        var flapping = FaceTracker(configuration: .video)
        var held = FaceTracker(configuration: .video)
        var flapEvents: [FaceTracker.Event] = [], heldEvents: [FaceTracker.Event] = []
        // Walks in at full rate (entered on its third frame), then stands still: analysed every
        // 2 s, and the detector misses it once (at 4.3 s).
        let times = [0.0, 0.1, 0.2, 0.3, 2.3, 4.3, 6.3, 8.3]
        for (i, t) in times.enumerated() {
            let found = t == 4.3 ? [] : [detection]
            flapEvents += flapping.update(with: found, at: MediaTime(seconds: t), inputID: input)
            if i > 0, t - times[i - 1] > 0.15 { held.sceneWasStill(through: MediaTime(seconds: t - 0.1)) }
            heldEvents += held.update(with: found, at: MediaTime(seconds: t), inputID: input)
        }
        let entered = heldEvents.filter { if case .entered = $0 { true } else { false } }
        let left = heldEvents.filter { if case .left = $0 { true } else { false } }
        #expect(entered.count == 1 && left.isEmpty, "\(heldEvents)")
        // Without it, the one miss after 2 s unseen ends the face, and it enters again as new.
        #expect(flapEvents.contains { if case .left = $0 { true } else { false } }, "\(flapEvents)")
    }

    static func name(_ change: CodeTracker.Change) -> String {
        switch change {
        case .appeared: "appear"
        case .repeated: "repeat"
        case .left: "leave"
        }
    }
}

/// Motion gating in a session, on synthetic scenes with known content played frame by frame
/// (as fast as possible: nothing is skipped, so the figures do not depend on the machine).
@Suite struct MotionGatedOutputTests {
    /// A textured still background (noise whose values never saturate when brightened).
    static let background = SyntheticScene.Background.noise(seed: 7, mean: 90, standardDeviation: 18)

    func scene(seconds: Double = 8, sprites: [SyntheticScene.Sprite] = [], lightChanges: [SyntheticScene.LightChange] = [])
        -> SyntheticScene
    {
        SyntheticScene(
            size: .init(width: 320, height: 240), frameRate: 10, frameCount: Int(seconds * 10), background: Self.background,
            sprites: sprites, lightChanges: lightChanges)
    }

    /// A grey block crossing from `at` to `until` seconds.
    func block(at: Double, until: Double, x: Double = 20, y: Double = 80) -> SyntheticScene.Sprite {
        .init(
            content: .color(red: 230, green: 230, blue: 230), size: .init(width: 40, height: 40), origin: CGPoint(x: x, y: y),
            velocity: CGSize(width: 60, height: 0), appearsAt: at, disappearsAt: until)
    }

    /// Plays `scene` with a frame-logging code stage and gating on; returns the log, the
    /// recorder and the output.
    func gated(_ scene: SyntheticScene, motion: CaptureMetadataOutput.MotionDetection = .init())
        throws -> (AnalysedFrameLog, MetadataRecorder, CaptureMetadataOutput)
    {
        let log = AnalysedFrameLog()
        let output = CaptureMetadataOutput(faceStage: nil, codeStage: log)
        let recorder = try MetadataRecorder.record(scene, through: output, types: [.qr]) { $0.motionDetection = motion }
        return (log, recorder, output)
    }

    func motionEvents(_ recorder: MetadataRecorder) -> [(name: String, time: Int, object: MetadataMotionObject)] {
        recorder.events.compactMap { e in
            switch e {
            case .motionStarted(let m), .motionEnded(let m): (e.name, Int((m.time.seconds * 10).rounded()), m)
            default: nil
            }
        }
    }

    @Test func aStillSceneIsAnalysedAtTheIdleRateThenAtFullRateFromTheFrameMotionStarts() throws {
        let (log, recorder, output) = try gated(scene(seconds: 10, sprites: [block(at: 3, until: 5)]))
        let analysed = tenths(log.analysed)
        // While still: the first frame and every 2 s.
        #expect(analysed.filter { $0 < 30 } == [0, 20], "\(analysed)")
        // From the very frame the block appears, every frame while it moves and for 1 s after.
        #expect(Set(30...59).isSubset(of: Set(analysed)), "\(analysed)")
        // Then still again (the block's trail fades from the background within a second):
        // idle analyses only, 2 s apart.
        #expect(analysed.count < 50, "\(analysed)")
        let late = analysed.filter { $0 > 75 }
        #expect(!late.isEmpty && zip(late, late.dropFirst()).allSatisfy { $1 - $0 >= 20 }, "\(analysed)")
        let events = motionEvents(recorder)
        #expect(events.map(\.name) == ["start", "end"], "\(events.map(\.name))")
        #expect(events.first?.time == 30)
        // The box is where the block is (x 20…60 of 320, y 80…120 of 240), to within a few pixels.
        let box = try #require(events.first?.object.bounds)
        #expect(abs(box.midX - 40.0 / 320) < 0.03 && abs(box.midY - 100.0 / 240) < 0.04, "\(box)")
        #expect(output.processedFrameCount == 100 && output.skippedFrameCount == 0)
        #expect(output.stillFrameCount == 100 - analysed.count)
        // Motion objects come with the analysed frames that moved.
        let motionFrames = recorder.frames.compactMap { $0.first { $0 is MetadataMotionObject } }
        #expect(motionFrames.count >= 19)
    }

    @Test func withoutMotionDetectionEveryFrameIsAnalysed() throws {
        let (log, recorder, output) = try gated(scene(seconds: 3, sprites: [block(at: 1, until: 2)]), motion: .disabled)
        #expect(log.analysed.count == 30)
        #expect(motionEvents(recorder).isEmpty && output.stillFrameCount == 0)
    }

    @Test func aLightSwitchedOnDoesNotKeepDetectionAtTheFullRate() throws {
        let changes = [SyntheticScene.LightChange(at: 3, gain: 1.5), .init(at: 6, gain: 0.7)]
        let (log, recorder, _) = try gated(scene(seconds: 9, lightChanges: changes))
        let analysed = tenths(log.analysed)
        // The idle analyses (0, 2, 4, 6, 8 s) and at most the frame of each step.
        #expect(analysed.count <= 7, "\(analysed)")
        #expect(Set(analysed).subtracting([0, 20, 40, 60, 80, 30]).isEmpty, "\(analysed)")
        #expect(motionEvents(recorder).isEmpty)
    }

    @Test func motionInAMaskWakesNothing() throws {
        let sprites = [block(at: 2, until: 4, x: 10, y: 20)]
        let mask = CGRect(x: 0, y: 0, width: 0.6, height: 0.5)
        let (log, recorder, _) = try gated(scene(seconds: 6, sprites: sprites), motion: .init(masks: [mask]))
        #expect(tenths(log.analysed) == [0, 20, 40], "\(log.analysed)")
        #expect(motionEvents(recorder).isEmpty)
        // The same block below the mask is motion.
        let (_, seen, _) = try gated(scene(seconds: 6, sprites: [block(at: 2, until: 4, x: 10, y: 160)]), motion: .init(masks: [mask]))
        #expect(motionEvents(seen).map(\.name) == ["start", "end"])
    }

    @Test func aCodeHeldStillIsReadAtTheIdleRateAsOneAppearance() throws {
        let code = SyntheticScene.Sprite(
            content: .qrCode(payload: Array("door-7".utf8), correction: 1), size: .init(width: 110, height: 110),
            origin: CGPoint(x: 105, y: 65))
        let output = CaptureMetadataOutput()
        let recorder = try MetadataRecorder.record(scene(seconds: 7, sprites: [code]), through: output, types: [.qr]) {
            $0.motionDetection = .init()
            $0.codeRepeatInterval = 1
        }
        let codes = recorder.events.compactMap { e -> (String, Int)? in
            guard let c = e.object as? MetadataMachineReadableCodeObject, c.stringValue == "door-7" else { return nil }
            return (e.name, Int((c.time.seconds * 10).rounded()))
        }
        // Read at 0, 2, 4, 6 s (the idle analyses): no leave until the stream ends.
        #expect(codes.map(\.0) == ["appear", "repeat", "repeat", "repeat", "leave"], "\(codes)")
        #expect(codes.map(\.1).prefix(4) == [0, 20, 40, 60])
        #expect(output.stillFrameCount == 66)
    }

    /// The first `name` event's frame time about a code or face, gated and not.
    func firstEvent(
        _ scene: SyntheticScene, types: [MetadataObjectType], name: String, gated: Bool
    ) throws -> Double? {
        let output = CaptureMetadataOutput()
        let recorder = try MetadataRecorder.record(scene, through: output, types: types) {
            $0.motionDetection = gated ? .init() : .disabled
        }
        return recorder.events.first { $0.name == name && !($0.object is MetadataMotionObject) }?.object.time.seconds
    }

    @Test func aCodeThatComesIntoViewIsReportedNoLaterThanWithoutGating() throws {
        let code = SyntheticScene.Sprite(
            content: .qrCode(payload: Array("late?".utf8), correction: 1), size: .init(width: 110, height: 110),
            origin: CGPoint(x: 60, y: 65), velocity: CGSize(width: 20, height: 0), appearsAt: 3.35)
        let s = scene(seconds: 5, sprites: [code])
        let plain = try #require(try firstEvent(s, types: [.qr], name: "appear", gated: false))
        let gated = try #require(try firstEvent(s, types: [.qr], name: "appear", gated: true))
        #expect(gated <= plain + 0.1 + 1e-6, "gated \(gated) s, plain \(plain) s")
        #expect(abs(plain - 3.4) < 1e-6)
    }

    @Test func aFaceThatWalksInIsReportedNoLaterThanWithoutGating() throws {
        let face = SyntheticScene.Sprite(
            content: .image(path: Fixtures.faceImage("grace_hopper.jpg")), size: .init(width: 110, height: 128),
            origin: CGPoint(x: 40, y: 50), velocity: CGSize(width: 40, height: 0), appearsAt: 2.55)
        let s = scene(seconds: 4, sprites: [face])
        let plain = try #require(try firstEvent(s, types: [.face], name: "enter", gated: false))
        let gated = try #require(try firstEvent(s, types: [.face], name: "enter", gated: true))
        #expect(gated <= plain + 0.1 + 1e-6, "gated \(gated) s, plain \(plain) s")
    }

    /// A face that appears in a scene idle for a second is reported with the very frame its
    /// motion starts: the frames before it were far apart, so the tracker's hold
    /// (`FaceTracker.Configuration.maximumHoldGap`) lets it enter at once.
    @Test func aFaceAppearingInAnIdleSceneIsReportedWithTheFrameMotionStarts() throws {
        let face = SyntheticScene.Sprite(
            content: .image(path: Fixtures.faceImage("grace_hopper.jpg")), size: .init(width: 110, height: 128),
            origin: CGPoint(x: 100, y: 50), velocity: CGSize(width: 30, height: 0), appearsAt: 3.05)
        let output = CaptureMetadataOutput()
        let recorder = try MetadataRecorder.record(scene(seconds: 5, sprites: [face]), through: output, types: [.face]) {
            $0.motionDetection = .init()
        }
        let start = try #require(recorder.events.first { $0.name == "start" }?.object.time.seconds)
        let enter = try #require(recorder.events.first { $0.name == "enter" }?.object.time.seconds)
        #expect(abs(start - 3.1) < 1e-6, "motion started at \(start) s")
        #expect(abs(enter - start) < 1e-6, "entered at \(enter) s, motion started at \(start) s")
        let plain = try #require(try firstEvent(scene(seconds: 5, sprites: [face]), types: [.face], name: "enter", gated: false))
        #expect(enter <= plain, "gated \(enter) s, every frame \(plain) s")
    }

    @Test func aFaceThatStopsAtTheDoorKeepsOneIDWhileDetectionIdles() throws {
        let path = Fixtures.faceImage("grace_hopper.jpg")
        let size = CaptureDevice.Dimensions(width: 110, height: 128)
        let sprites: [SyntheticScene.Sprite] = [
            // Walks in for a second, then stands still for nine.
            .init(content: .image(path: path), size: size, origin: CGPoint(x: 0, y: 50), velocity: CGSize(width: 100, height: 0),
                  appearsAt: 1, disappearsAt: 2),
            .init(content: .image(path: path), size: size, origin: CGPoint(x: 100, y: 50), appearsAt: 2),
        ]
        let output = CaptureMetadataOutput()
        let recorder = try MetadataRecorder.record(scene(seconds: 11, sprites: sprites), through: output, types: [.face]) {
            $0.motionDetection = .init()
        }
        let names = recorder.events.filter { !($0.object is MetadataMotionObject) }.map(\.name)
        #expect(names.filter { $0 == "enter" }.count == 1, "\(names)")
        #expect(names.filter { $0 == "leave" }.count == 1, "\(names)")  // as the stream ends
        // Standing still, the face is looked for every 2 s, not 10 times a second.
        #expect(output.stillFrameCount > 50, "\(output.stillFrameCount) still frames")
    }

    @Test func motionAloneNeedsNoDetector() throws {
        let output = CaptureMetadataOutput()
        let recorder = try MetadataRecorder.record(scene(seconds: 4, sprites: [block(at: 1, until: 2)]), through: output, types: []) {
            $0.motionDetection = .init()
        }
        #expect(motionEvents(recorder).map(\.name) == ["start", "end"])
        #expect(output.loadedStages == (false, false))
    }
}
