import CaptureKit
import CaptureVision
import Foundation
import Testing

@Suite("FaceTracker")
struct FaceTrackerTests {
    let input = CaptureInput.ID(rawValue: 7)

    /// A detection at a device-space box (no landmarks needed for tracking).
    func face(_ x: Double, _ y: Double = 0.3, size: Double = 0.2) -> FaceDetection {
        FaceDetection(
            bounds: CGRect(x: x, y: y, width: size, height: size), landmarks: [], confidence: 0.9, rollAngle: nil,
            yawAngle: nil)
    }

    func time(_ frame: Int, fps: Int32 = 30) -> MediaTime { MediaTime(value: Int64(frame), timescale: fps) }

    @Test func oneFaceIDForAFaceMovingAcrossASyntheticScene() throws {
        // grace_hopper.jpg (face at 176,121 181×211 in a 512×600 portrait) as a 160×188 sprite
        // moving right at 150 px/s over a flat background, 40 frames at 30 fps.
        let sprite = SyntheticScene.Sprite(
            content: .image(path: FaceFixtures.faces.appendingPathComponent("images/grace_hopper.jpg").path),
            size: .init(width: 160, height: 188), origin: CGPoint(x: 20, y: 120), velocity: CGSize(width: 150, height: 0))
        let scene = SyntheticScene(
            size: .init(width: 640, height: 480), frameRate: 30, frameCount: 40,
            background: .color(red: 90, green: 110, blue: 100), sprites: [sprite])
        let source = try SyntheticCameraSource(scene: scene, pacing: .asFastAsPossible)
        try source.open(format: source.formats[0], frameDuration: MediaTime.frameDuration(framesPerSecond: 30))
        defer { source.close() }
        let detector = try FaceFixtures.detector()
        var tracker = FaceTracker()
        var events: [FaceTracker.Event] = []
        var framesWithFace = 0
        var index = 0
        while let frame = try source.nextFrame(isCancelled: { false }) {
            let faces = try detector.detect(in: frame.pixelBuffer)
            if !faces.isEmpty { framesWithFace += 1 }
            // The detected face lies on the sprite's ground truth.
            let truth = try #require(scene.visibleSprites(atFrame: index).first).bounds
            for f in faces { #expect(truth.contains(CGPoint(x: f.bounds.midX, y: f.bounds.midY))) }
            events += tracker.update(with: faces, at: frame.presentationTimeStamp, inputID: input)
            index += 1
        }
        #expect(framesWithFace >= 36)
        let ids = Set(events.map(\.face.faceID))
        #expect(ids.count == 1)
        #expect(events.filter { if case .entered = $0 { true } else { false } }.count == 1)
        #expect(!events.contains { if case .left = $0 { true } else { false } })
        // It moved: the last update is well to the right of the entry.
        let first = try #require(events.first?.face.bounds.midX)
        let last = try #require(events.last?.face.bounds.midX)
        #expect(last - first > 0.2)
    }

    @Test func newFaceIDWhenTheFaceReturnsToASyntheticScene() throws {
        // The same face shown 0…0.5 s, gone 0.5…1.2 s (longer than the 0.5 s miss limit), back
        // 1.2…1.7 s at another place; 51 frames at 30 fps.
        let path = FaceFixtures.faces.appendingPathComponent("images/grace_hopper.jpg").path
        let scene = SyntheticScene(
            size: .init(width: 640, height: 480), frameRate: 30, frameCount: 51,
            background: .color(red: 90, green: 110, blue: 100),
            sprites: [
                .init(content: .image(path: path), size: .init(width: 160, height: 188), origin: CGPoint(x: 40, y: 100),
                      appearsAt: 0, disappearsAt: 0.5),
                .init(content: .image(path: path), size: .init(width: 160, height: 188), origin: CGPoint(x: 380, y: 160),
                      appearsAt: 1.2, disappearsAt: 1.7),
            ])
        let source = try SyntheticCameraSource(scene: scene, pacing: .asFastAsPossible)
        try source.open(format: source.formats[0], frameDuration: MediaTime.frameDuration(framesPerSecond: 30))
        defer { source.close() }
        let detector = try FaceFixtures.detector()
        var tracker = FaceTracker()
        var events: [FaceTracker.Event] = []
        while let frame = try source.nextFrame(isCancelled: { false }) {
            events += tracker.update(with: try detector.detect(in: frame.pixelBuffer), at: frame.presentationTimeStamp, inputID: input)
        }
        events += tracker.reset()
        let kinds = events.map { e -> String in
            switch e {
            case .entered: "enter"
            case .updated: "update"
            case .left: "leave"
            }
        }.filter { $0 != "update" }
        #expect(kinds == ["enter", "leave", "enter", "leave"])
        let entered = events.compactMap { if case .entered(let f) = $0 { f } else { nil } }
        #expect(entered.count == 2 && entered[0].faceID != entered[1].faceID)
        #expect(entered.count == 2 && entered[1].faceID > entered[0].faceID)
    }

    @Test func newFaceIDAfterLeavingAndReturning() {
        var tracker = FaceTracker(configuration: .init(maximumMissedFrames: 5, maximumMissedDuration: 0.5))
        var events: [FaceTracker.Event] = []
        for i in 0..<60 {
            let present = i < 10 || i >= 40  // gone for 30 frames = 1 s
            events += tracker.update(with: present ? [face(0.4)] : [], at: time(i), inputID: input)
        }
        let entered = events.compactMap { if case .entered(let f) = $0 { f } else { nil } }
        let left = events.compactMap { if case .left(let f) = $0 { f } else { nil } }
        #expect(entered.count == 2)
        #expect(left.count == 1)
        #expect(entered[0].faceID != entered[1].faceID)
        #expect(left.first?.faceID == entered[0].faceID)
        // Left after 6 missed frames (> 5), before the face came back.
        #expect(left.first?.time == time(9))
    }

    @Test func faceIDSurvivesABriefMiss() {
        var tracker = FaceTracker(configuration: .init(maximumMissedFrames: 5, maximumMissedDuration: 0.5))
        var events: [FaceTracker.Event] = []
        for i in 0..<30 {
            let missed = (10..<14).contains(i)  // 4 frames undetected
            events += tracker.update(with: missed ? [] : [face(0.2 + 0.005 * Double(i))], at: time(i), inputID: input)
        }
        #expect(Set(events.map(\.face.faceID)).count == 1)
        #expect(!events.contains { if case .left = $0 { true } else { false } })
        #expect(tracker.faces.count == 1)
    }

    @Test func missedDurationAlsoEndsATrack() {
        // At 2 fps, one missed frame is 0.5 s; a 0.3 s limit ends the track on the first miss.
        var tracker = FaceTracker(configuration: .init(maximumMissedFrames: 10, maximumMissedDuration: 0.3))
        _ = tracker.update(with: [face(0.4)], at: time(0, fps: 2), inputID: input)
        let events = tracker.update(with: [], at: time(1, fps: 2), inputID: input)
        #expect(events.count == 1)
        if case .left = events.first {} else { Issue.record("expected a leave, got \(events)") }
    }

    @Test func enterUpdateLeaveOrderingAndRateLimitedUpdates() {
        var tracker = FaceTracker(configuration: .init(maximumMissedFrames: 2, updateInterval: 0.25))
        var events: [(MediaTime, FaceTracker.Event)] = []
        for i in 0..<40 {
            let present = i < 30  // 1 s of face, then gone
            for e in tracker.update(with: present ? [face(0.3 + 0.002 * Double(i))] : [], at: time(i), inputID: input) {
                events.append((time(i), e))
            }
        }
        guard case .entered(let entry) = events.first?.1, case .left(let exit) = events.last?.1 else {
            Issue.record("expected enter first and leave last: \(events.map(\.1))")
            return
        }
        #expect(entry.faceID == exit.faceID)
        let updates = events.dropFirst().dropLast()
        #expect(updates.allSatisfy { if case .updated(let f) = $0.1 { f.faceID == entry.faceID } else { false } })
        // 30 frames over 1 s at one update per 0.25 s: 0.27, 0.53, 0.8 → three updates, not 29.
        #expect(updates.count == 3)
        var previous = 0.0
        for (t, _) in updates {
            #expect(t.seconds - previous >= 0.25 - 1e-9)
            previous = t.seconds
        }
        // Updates carry the latest position.
        if case .updated(let f) = updates.last?.1 { #expect(f.bounds.minX > entry.bounds.minX) }
    }

    @Test func aFaceSeenInOneFrameOfVideoNeverEnters() {
        var tracker = FaceTracker(configuration: .video)
        var events: [FaceTracker.Event] = []
        // A flicker: one frame, two frames, then nothing; each time somewhere else.
        for i in 0..<20 {
            let flicker: [FaceDetection] = i == 3 ? [face(0.1)] : (i == 8 || i == 9) ? [face(0.6)] : []
            events += tracker.update(with: flicker, at: time(i), inputID: input)
            #expect(tracker.faces.isEmpty)
        }
        #expect(events.isEmpty)
        _ = tracker.reset()
    }

    /// Frames far apart (a busy box skipping frames, or detection gated to a low rate) leave no
    /// consecutive frames to hold a face over: a face moving a box's width between them would be
    /// dropped and held again forever. It enters on its first frame, as without the hold, and a
    /// frame close to the one before is held again.
    @Test func framesFarApartLetAMovingFaceEnterAtOnce() {
        var tracker = FaceTracker(configuration: .video)
        var events: [FaceTracker.Event] = []
        // Every 0.5 s, the face a box's width further on each time.
        for i in 0..<4 {
            events += tracker.update(
                with: [face(0.1 + 0.2 * Double(i))], at: MediaTime(seconds: 10 + 0.5 * Double(i)), inputID: input)
        }
        guard case .entered(let entry)? = events.first else {
            Issue.record("expected an enter on the first far-apart frame, got \(events)")
            return
        }
        #expect(entry.time == MediaTime(seconds: 10.5))  // the very first frame has none before it: held
        _ = tracker.reset()

        // Close together again (30 fps): a new face is held for its three frames.
        var dense = FaceTracker(configuration: .video)
        var denseEvents: [FaceTracker.Event] = []
        for i in 0..<2 {
            denseEvents += dense.update(with: [face(0.5)], at: MediaTime(seconds: Double(i) / 30), inputID: input)
        }
        #expect(denseEvents.isEmpty)
        _ = dense.reset()
    }

    @Test func aFaceThatStaysEntersOnItsThirdFrameWithTheFirstUnusedID() {
        var tracker = FaceTracker(configuration: .video)
        var other = FaceTracker()
        var otherID: Int?
        var events: [(Int, FaceTracker.Event)] = []
        for i in 0..<10 {
            events += tracker.update(with: [face(0.3 + 0.004 * Double(i))], at: time(i), inputID: input).map { (i, $0) }
            // Another face enters elsewhere while this one is held back.
            if i == 1 { otherID = other.update(with: [face(0.5)], at: time(i), inputID: input).first?.face.faceID }
        }
        guard case .entered(let entry)? = events.first?.1 else {
            Issue.record("expected an enter first, got \(events)")
            return
        }
        #expect(events.first?.0 == 2)
        #expect(entry.time == time(2))
        #expect(abs(Double(entry.bounds.minX) - (0.3 + 0.008)) < 1e-9)
        #expect(tracker.faces.map(\.faceID) == [entry.faceID])
        // The ID is taken when the face enters, not when it is first seen.
        #expect(entry.faceID > (otherID ?? .max))
        // Leaving reports the face that entered; a held face leaves without a word.
        let left = tracker.update(with: [face(0.1, size: 0.05)], at: time(10), inputID: input)
        #expect(left.isEmpty)
        #expect(tracker.reset().map(\.face.faceID) == [entry.faceID])
    }

    @Test func aStillPhotoIsNotHeldBack() {
        var tracker = FaceTracker(configuration: .video)
        let events = tracker.update(with: [face(0.3)], at: time(0), inputID: input, holdsNewFaces: false)
        #expect(events.count == 1)
        if case .entered = events.first {} else { Issue.record("expected an enter, got \(events)") }
        #expect(tracker.faces.count == 1)
    }

    @Test func faceIDsAreNeverReusedAcrossTrackers() {
        var a = FaceTracker()
        var b = FaceTracker()
        var ids: [Int] = []
        for i in 0..<5 {
            ids += a.update(with: [face(0.1), face(0.6)], at: time(i * 100), inputID: input).compactMap {
                if case .entered(let f) = $0 { f.faceID } else { nil }
            }
            ids += b.update(with: [face(0.1)], at: time(i * 100), inputID: input).compactMap {
                if case .entered(let f) = $0 { f.faceID } else { nil }
            }
            // An empty frame 50 frames (1.7 s) later: every face leaves.
            _ = a.update(with: [], at: time(i * 100 + 50), inputID: input)
            _ = b.update(with: [], at: time(i * 100 + 50), inputID: input)
        }
        // Every 100 frames (3.3 s) all faces left and re-entered: 15 entries, 15 distinct IDs.
        #expect(ids.count == 15)
        #expect(Set(ids).count == 15)
    }

    @Test func twoFacesKeepTheirOwnIDsWhileMovingPastEachOther() {
        var tracker = FaceTracker(configuration: .init(updateInterval: 0))
        var idAtLeft: Int?
        var idAtRight: Int?
        for i in 0..<20 {
            let shift = 0.01 * Double(i)
            let events = tracker.update(with: [face(0.1 + shift, 0.1), face(0.7 - shift, 0.6)], at: time(i), inputID: input)
            for e in events {
                if e.face.bounds.minY < 0.3 { idAtLeft = idAtLeft ?? e.face.faceID; #expect(e.face.faceID == idAtLeft) }
                else { idAtRight = idAtRight ?? e.face.faceID; #expect(e.face.faceID == idAtRight) }
            }
        }
        #expect(idAtLeft != nil && idAtRight != nil && idAtLeft != idAtRight)
    }

    /// Tracked faces are followed in pixels: the boxes handed to the search near them are the
    /// detector's own pixel boxes moved by a velocity in pixels, with no trip through device
    /// space; device space is what the tracker reports.
    @Test func trackedFacesAreFollowedInPixels() {
        let space = DeviceSpace(width: 1280, height: 720)
        func detection(_ pixels: CGRect) -> FaceDetection {
            var d = FaceDetection(
                bounds: space.deviceRect(fromPixels: pixels), landmarks: [], confidence: 0.9, rollAngle: nil, yawAngle: nil)
            d.pixelBox = .init(bounds: pixels, space: space)
            return d
        }
        let first = CGRect(x: 101.7, y: 33.1, width: 50.3, height: 60.9)
        let second = first.offsetBy(dx: 3.3, dy: -1.1)
        var tracker = FaceTracker()
        _ = tracker.update(with: [detection(first)], at: time(0), inputID: input)
        let updates = tracker.update(with: [detection(second)], at: time(1), inputID: input)
        // Reported in device space.
        #expect(tracker.faces.map(\.bounds) == [space.deviceRect(fromPixels: second)])
        #expect(updates.allSatisfy { $0.face.bounds == space.deviceRect(fromPixels: second) })
        let step = time(1).seconds - time(0).seconds
        let velocity = CGSize(width: (second.midX - first.midX) / step, height: (second.midY - first.midY) / step)
        let ahead = time(2).seconds - time(1).seconds
        let expected = second.offsetBy(dx: velocity.width * ahead, dy: velocity.height * ahead)
        #expect(tracker.predictedPixelBounds(at: time(2), in: space) == [expected])
        // The device-space prediction is the same box, up to rounding.
        let viaDevice = tracker.predictedBounds(at: time(2)).map(space.pixelRect(fromDevice:))
        #expect(viaDevice.count == 1 && abs(viaDevice[0].minX - expected.minX) < 1e-6 && abs(viaDevice[0].minY - expected.minY) < 1e-6)
        // Frames of another size, or detections without pixel boxes, give no pixel prediction.
        #expect(tracker.predictedPixelBounds(at: time(2), in: DeviceSpace(width: 640, height: 360)) == nil)
        var byHand = FaceTracker()
        _ = byHand.update(with: [face(0.3)], at: time(0), inputID: input)
        #expect(byHand.predictedPixelBounds(at: time(1), in: space) == nil)
    }
}
