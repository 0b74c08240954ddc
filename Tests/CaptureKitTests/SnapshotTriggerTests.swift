@testable import CaptureKit
@testable import CaptureVision
import CVBridge
import Foundation
import Testing

/// Frames and faces built by hand: the trigger is pure logic over (frame, faces) pairs.
private struct Clip {
    static let input = CaptureInput.ID(rawValue: 9)
    let sharp: PixelBuffer
    let blurred: PixelBuffer

    init() throws {
        let source = try SyntheticCameraSource(
            scene: SyntheticScene(size: .init(width: 160, height: 120), background: .noise(seed: 5, mean: 120, standardDeviation: 50)))
        try source.open(format: source.formats[0], frameDuration: MediaTime(value: 1, timescale: 30))
        sharp = try source.nextFrame(isCancelled: { false })!.pixelBuffer
        source.close()
        // Blur: shrink to an eighth and scale back up.
        let small = try PixelBuffer(width: 20, height: 15, pixelFormat: .bgr)
        blurred = try PixelBuffer(width: 160, height: 120, pixelFormat: .bgr)
        var err = cvb_error()
        _ = PixelBuffer.withBridgeImages(sharp, small) { cvb_image_resize(&$0, &$1, PixelBuffer.resizeInterpolation($0, to: $1), &err) }
        _ = PixelBuffer.withBridgeImages(small, blurred) { cvb_image_resize(&$0, &$1, PixelBuffer.resizeInterpolation($0, to: $1), &err) }
    }

    func frame(_ i: Int, blurred isBlurred: Bool = false) -> SampleBuffer {
        SampleBuffer(
            pixelBuffer: isBlurred ? blurred : sharp, presentationTimeStamp: MediaTime(value: Int64(i), timescale: 30),
            duration: MediaTime(value: 1, timescale: 30), sequenceNumber: UInt64(i), inputID: Self.input)
    }

    static func face(_ id: Int, frame i: Int, confidence: Double = 0.9, height: Double = 0.3, roll: Double? = nil, yaw: Double? = nil)
        -> MetadataFaceObject
    {
        MetadataFaceObject(
            bounds: CGRect(x: 0.3, y: 0.3, width: 0.25, height: height), faceID: id, hasRollAngle: roll != nil,
            rollAngle: roll ?? 0, hasYawAngle: yaw != nil, yawAngle: yaw ?? 0, confidence: confidence,
            time: MediaTime(value: Int64(i), timescale: 30), inputID: input)
    }

    /// Runs frames 0..<count through `trigger`; `faces(i)` gives frame i's faces.
    func run(_ trigger: SnapshotTrigger, frames count: Int, blurred: (Int) -> Bool = { _ in false },
             faces: (Int) -> [MetadataFaceObject]) -> [Snapshot] {
        var out: [Snapshot] = []
        for i in 0..<count { out += trigger.process(frame(i, blurred: blurred(i)), faces: faces(i)) }
        return out + trigger.finish()
    }

    /// Face 1 in frames 0–29, nobody in 30–59, face 2 (a new track) in 60–89.
    static func enteringTwice(_ i: Int) -> [MetadataFaceObject] {
        switch i {
        case 0..<30: [face(1, frame: i)]
        case 60..<90: [face(2, frame: i)]
        default: []
        }
    }
}

@Suite struct SnapshotTriggerTests {
    @Test func aFaceFreeSequenceTakesNothing() throws {
        let clip = try Clip()
        let trigger = SnapshotTrigger(configuration: .init(mode: .interval(seconds: 0.1), bestFrameWindow: 3))
        #expect(clip.run(trigger, frames: 120, faces: { _ in [] }).isEmpty)
    }

    @Test func facesEnteringTwiceUnderEachCooldown() throws {
        let clip = try Clip()
        func frames(_ c: SnapshotTrigger.Configuration) -> [UInt64] {
            clip.run(SnapshotTrigger(configuration: c), frames: 90, faces: Clip.enteringTwice).map(\.frame.sequenceNumber)
        }
        // No cooldown: one snapshot per track, on its first frame.
        #expect(frames(.init()) == [0, 60])
        // A global cooldown longer than the whole clip: only the first.
        #expect(frames(.init(globalCooldown: 3)) == [0])
        // A global cooldown ending while face 2 is present: face 2 waits for it (2.5 s = frame 75).
        #expect(frames(.init(globalCooldown: 2.5)) == [0, 75])
        // A per-face cooldown: each face triggers again every 0.5 s while it stays.
        #expect(frames(.init(faceCooldown: 0.5)) == [0, 15, 60, 75])
        let reasons = clip.run(SnapshotTrigger(configuration: .init(faceCooldown: 0.5)), frames: 90, faces: Clip.enteringTwice)
            .map(\.reason)
        #expect(reasons == [.newFace, .faceCooldownElapsed, .newFace, .faceCooldownElapsed])
        // Both cooldowns: the global one wins over face 1's repeat.
        #expect(frames(.init(faceCooldown: 0.5, globalCooldown: 1)) == [0, 60])
    }

    @Test func gatesRejectSmallUnsureTiltedTurnedAndBlurredFaces() throws {
        let clip = try Clip()
        let config = SnapshotTrigger.Configuration(
            minimumFaceSize: 0.2, minimumConfidence: 0.8, maximumRollAngle: 20, maximumYawAngle: 30, minimumSharpness: 50)
        let rejected: [(Int) -> [MetadataFaceObject]] = [
            { [Clip.face(1, frame: $0, height: 0.1)] },
            { [Clip.face(1, frame: $0, confidence: 0.5)] },
            { [Clip.face(1, frame: $0, roll: 25)] },
            { [Clip.face(1, frame: $0, yaw: -40)] },
        ]
        for faces in rejected { #expect(clip.run(SnapshotTrigger(configuration: config), frames: 10, faces: faces).isEmpty) }
        #expect(clip.run(SnapshotTrigger(configuration: config), frames: 10, blurred: { _ in true }, faces: { [Clip.face(1, frame: $0)] }).isEmpty)
        // The same face, sharp and upright, passes.
        let taken = clip.run(SnapshotTrigger(configuration: config), frames: 10, faces: { [Clip.face(1, frame: $0, roll: 5, yaw: 10)] })
        #expect(taken.map(\.frame.sequenceNumber) == [0])
        #expect((taken.first?.annotation.details["sharpness"] ?? 0) > 50)
    }

    @Test func bestFrameIsTheSharpestMostFrontalOfTheWindow() throws {
        let clip = try Clip()
        let sharpness = try SnapshotTrigger.sharpness(of: clip.sharp, in: CGRect(x: 0.3, y: 0.3, width: 0.25, height: 0.3))
        let soft = try SnapshotTrigger.sharpness(of: clip.blurred, in: CGRect(x: 0.3, y: 0.3, width: 0.25, height: 0.3))
        #expect(sharpness > 10 * soft)
        // Only frame 3 of the first five is sharp.
        let trigger = SnapshotTrigger(configuration: .init(bestFrameWindow: 5))
        let bySharpness = clip.run(trigger, frames: 30, blurred: { $0 != 3 }, faces: { [Clip.face(1, frame: $0)] })
        #expect(bySharpness.map(\.frame.sequenceNumber) == [3])
        #expect(bySharpness.first?.annotation.details["framesConsidered"] == 5)
        // All equally sharp: the most frontal wins (yaw 0 at frame 2).
        let yaws: [Double] = [40, 25, 0, 10, 30]
        let byPose = clip.run(SnapshotTrigger(configuration: .init(bestFrameWindow: 5)), frames: 30) {
            [Clip.face(1, frame: $0, yaw: $0 < 5 ? yaws[$0] : 0)]
        }
        #expect(byPose.map(\.frame.sequenceNumber) == [2])
        // A face that leaves before the window fills is decided on what was seen.
        let short = clip.run(SnapshotTrigger(configuration: .init(bestFrameWindow: 10)), frames: 30, blurred: { $0 != 1 }) {
            $0 < 3 ? [Clip.face(1, frame: $0)] : []
        }
        #expect(short.map(\.frame.sequenceNumber) == [1])
    }

    @Test func maximumPerWindowCapsPeriodicSnapshots() throws {
        let clip = try Clip()
        let trigger = SnapshotTrigger(
            configuration: .init(mode: .interval(seconds: 0.5), maximumSnapshotsPerWindow: 3, snapshotWindow: 2))
        let taken = clip.run(trigger, frames: 150, faces: { [Clip.face(1, frame: $0)] })
        // Every 0.5 s, but never more than 3 in any 2 s: 0, 0.5, 1 | 2, 2.5, 3 | 4, 4.5.
        #expect(taken.map(\.frame.sequenceNumber) == [0, 15, 30, 60, 75, 90, 120, 135])
        #expect(taken.allSatisfy { $0.reason == .interval })
    }

    @Test func preTriggerFramesAndTheRecordComeWithTheSnapshot() throws {
        let clip = try Clip()
        let trigger = SnapshotTrigger(configuration: .init(preTriggerFrameCount: 3))
        let taken = clip.run(trigger, frames: 20) { $0 >= 10 ? [Clip.face(7, frame: $0), Clip.face(8, frame: $0, confidence: 0.3)] : [] }
        let s = try #require(taken.first)
        #expect(taken.count == 1)
        #expect(s.precedingFrames.map(\.sequenceNumber) == [7, 8, 9])
        #expect(s.triggeringFaceIDs == [7])
        #expect(s.annotation.faces.map(\.faceID) == [7, 8])  // every face in the frame is recorded
        #expect(s.annotation.reason == "newFace")
        #expect(s.annotation.frameTime == 10.0 / 30)

        // Written to disk: the photo, its three preceding frames, and the record inside the JPEG.
        let folder = try PhotoTestSupport.temporaryFolder("snapshots")
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = try SnapshotStore(folder: folder).write(s)
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        #expect(names == Set([url.lastPathComponent] + (1...3).map { url.deletingPathExtension().lastPathComponent + "-pre-0\($0).jpg" }))
        let script = """
            import sys
            from PIL import Image
            ex = Image.open(sys.argv[1]).getexif().get_ifd(0x8769)
            print(ex[0x9286][8:].decode('ascii'))
            """
        let json = try PhotoTestSupport.python(script, [url.path])
        let record = try JSONDecoder().decode(PhotoAnnotation.self, from: Data(json.utf8))
        #expect(record == s.annotation)
    }
}

/// Snapshot file names: camera, local wall time with milliseconds, reason; never a replaced file.
@Suite struct SnapshotStoreNamingTests {
    @Test func namesCarryTheCameraTheWallTimeAndTheReasonAndNeverReplaceAFile() throws {
        let clip = try Clip()
        let trigger = SnapshotTrigger(configuration: .init(preTriggerFrameCount: 1))
        let s = try #require(clip.run(trigger, frames: 5) { $0 >= 2 ? [Clip.face(3, frame: $0)] : [] }.first)
        let folder = try PhotoTestSupport.temporaryFolder("names")
        defer { try? FileManager.default.removeItem(at: folder) }
        var store = SnapshotStore(folder: folder)
        store.namePrefix = SnapshotStore.sanitizedName("Front Door (USB 2.0) ✓")
        #expect(store.namePrefix == "front-door-usb-2-0")
        #expect(SnapshotStore.sanitizedName("../..") == "camera")
        let when = Date(timeIntervalSince1970: 1_795_539_792.345)
        let stamp = LocalTimestamp(when).fileNameStamp
        #expect(store.fileName(for: s, wallTime: when) == "front-door-usb-2-0-\(stamp)-face3.jpg")

        // A file already there under the name (another run, another program) stays as it was.
        let taken = folder.appendingPathComponent("front-door-usb-2-0-\(stamp)-face3.jpg")
        try Data("not ours".utf8).write(to: taken)
        let first = try store.write(s, captureDate: when)
        let second = try store.write(s, captureDate: when)
        #expect(first.lastPathComponent == "front-door-usb-2-0-\(stamp)-face3-2.jpg")
        #expect(second.lastPathComponent == "front-door-usb-2-0-\(stamp)-face3-3.jpg")
        #expect(try Data(contentsOf: taken) == Data("not ours".utf8))
        // The earlier frame goes with the name its photo got.
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        #expect(names.contains("front-door-usb-2-0-\(stamp)-face3-2-pre-01.jpg"))
        #expect(names.contains("front-door-usb-2-0-\(stamp)-face3-3-pre-01.jpg"))
        #expect(names.count == 5)
    }
}
