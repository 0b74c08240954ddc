import CaptureKit
import Foundation
import Synchronization
import Testing

/// The face trigger end to end, as `cvcam watch` wires it: a synthetic camera → a metadata
/// output with the real default face stage (YuNet + tracker) → `SnapshotTrigger` →
/// `SnapshotStore`. Ground truth is the scene's timeline: one face is in view in frames
/// 10–29 (1.0–2.9 s), nobody in 30–39, and the face is back in frames 40–59 (a new track).
@Suite struct SnapshotTriggerSessionTests {
    /// Runs the trigger over the frames a `FaceObservingStage` hands it and writes what the
    /// trigger decides (the test's counterpart of `cvcam watch`'s `SnapshotWatcher`).
    final class TriggerWriter: @unchecked Sendable {
        // @unchecked: `trigger` is touched only in `consider`/`finishTrigger`; the metadata
        // output observes one frame at a time, and `finishTrigger` runs after the output is
        // idle. `written` and `writeErrors` are behind Mutexes.
        let trigger: SnapshotTrigger
        let store: SnapshotStore
        let written = Mutex<[(url: URL, snapshot: Snapshot)]>([])
        let writeErrors = Mutex<[CaptureError]>([])

        init(trigger: SnapshotTrigger, store: SnapshotStore) {
            self.trigger = trigger
            self.store = store
        }

        func consider(_ frame: SampleBuffer, faces: [MetadataFaceObject]) { write(trigger.process(frame, faces: faces)) }

        func finishTrigger() { write(trigger.finish()) }

        private func write(_ snapshots: [Snapshot]) {
            for s in snapshots {
                do throws(CaptureError) {
                    let url = try store.write(s)
                    written.withLock { $0.append((url, s)) }
                } catch {
                    writeErrors.withLock { $0.append(error) }
                }
            }
        }
    }

    static let frameRate = 10.0

    /// 6.5 s at 10 fps, 320x240: the face (Grace Hopper) drifts right in 1.0–3.0 s and left in
    /// 4.0–6.0 s. `face: false` swaps in a face-free photo (a rocket) on the same timeline.
    static func scene(face: Bool = true) -> SyntheticScene {
        let image = face ? Fixtures.faceImage("grace_hopper.jpg") : Fixtures.negative("rocket.jpg")
        return SyntheticScene(
            size: .init(width: 320, height: 240), frameRate: frameRate, frameCount: 65,
            background: .color(red: 110, green: 120, blue: 130),
            sprites: [
                .init(content: .image(path: image), size: .init(width: 128, height: 150), origin: CGPoint(x: 40, y: 45),
                      velocity: CGSize(width: 20, height: 0), appearsAt: 1.0, disappearsAt: 3.0),
                .init(content: .image(path: image), size: .init(width: 128, height: 150), origin: CGPoint(x: 150, y: 45),
                      velocity: CGSize(width: -20, height: 0), appearsAt: 4.0, disappearsAt: 6.0),
            ])
    }

    /// One snapshot as the test compares them: frame time in ms, reason, and which appearance
    /// of the face triggered it (1 = first track, 2 = second).
    struct Taken: Equatable, CustomStringConvertible {
        var ms: Int
        var reason: SnapshotReason
        var tracks: [Int]
        var description: String { "\(ms) ms \(reason.rawValue) \(tracks)" }
    }

    /// Runs the scene through a session and the trigger; returns what was written, in order.
    func run(_ configuration: SnapshotTrigger.Configuration, scene: SyntheticScene = scene()) throws
        -> (taken: [Taken], files: [String], faceIDs: [Int])
    {
        let folder = try PhotoTestSupport.temporaryFolder("trigger-session")
        defer { try? FileManager.default.removeItem(at: folder) }
        let device = try CaptureDevice(syntheticScene: scene, pacing: .asFastAsPossible)
        let writer = TriggerWriter(
            trigger: SnapshotTrigger(configuration: configuration), store: SnapshotStore(folder: folder, device: device))
        let stage = FaceObservingStage(wrapping: DefaultFaceStage(detector: try FaceDetector())) { frame, faces in
            writer.consider(frame, faces: faces)
        }
        let metadata = CaptureMetadataOutput(faceStage: stage, codeStage: nil)
        try metadata.setMetadataObjectTypes([.face])
        let session = CaptureSession()
        try session.addInput(CaptureDeviceInput(device: device))
        try session.addOutput(metadata)
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 60))
        metadata.waitUntilIdle()
        writer.finishTrigger()
        #expect(metadata.processedFrameCount == 65)
        #expect(writer.writeErrors.withLock { $0 }.isEmpty)

        let written = writer.written.withLock { $0 }
        // faceIDs come from a process-wide counter: name the tracks by order of appearance.
        var order: [Int] = []
        for (_, s) in written { for id in s.triggeringFaceIDs where !order.contains(id) { order.append(id) } }
        let taken = written.map { _, s in
            Taken(
                ms: Int((s.frame.presentationTimeStamp.seconds * 1000).rounded()), reason: s.reason,
                tracks: s.triggeringFaceIDs.map { order.firstIndex(of: $0)! + 1 })
        }
        // Every snapshot is a full-resolution file on disk, named by its frame time and faces.
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(files == written.map(\.url.lastPathComponent).sorted())
        #expect(written.allSatisfy { $0.snapshot.frame.width == 320 && $0.snapshot.frame.height == 240 })
        return (taken, files, order)
    }

    @Test func aFaceEnteringTwiceGivesExactlyTheExpectedSnapshotsUnderEachCooldown() throws {
        // Ground truth from the timeline: first frames in view are 1.0 s and 4.0 s.
        #expect(Self.scene().visibleSprites(atFrame: 9).isEmpty && Self.scene().visibleSprites(atFrame: 10).count == 1)
        #expect(Self.scene().visibleSprites(atFrame: 29).count == 1 && Self.scene().visibleSprites(atFrame: 30).isEmpty)
        #expect(Self.scene().visibleSprites(atFrame: 40).count == 1 && Self.scene().visibleSprites(atFrame: 60).isEmpty)

        // A new face enters on its third frame in view (the live hold, 0.2 s at 10 fps): the
        // faces are reported from 1.2 s and 4.2 s.
        let first = 1200, second = 4200
        // No cooldown: one snapshot per track, on its first frame reported; two distinct faceIDs.
        let plain = try run(.init())
        #expect(plain.taken == [Taken(ms: first, reason: .newFace, tracks: [1]), Taken(ms: second, reason: .newFace, tracks: [2])])
        #expect(plain.faceIDs.count == 2 && plain.faceIDs[0] < plain.faceIDs[1])
        // Named by input, wall time (for a scene: when written) and faces, in the order taken.
        let pattern = /snapshot-\d{8}-\d{6}\.\d{3}-face(\d+)\.jpg/
        #expect(plain.files.compactMap { try? pattern.wholeMatch(in: $0).map { Int($0.1) } } == plain.faceIDs, "\(plain.files)")

        // Per-faceID cooldown of 0.5 s: each track triggers again every 0.5 s while it stays.
        let perFace = try run(.init(faceCooldown: 0.5))
        #expect(perFace.taken == [
            Taken(ms: first, reason: .newFace, tracks: [1]), Taken(ms: first + 500, reason: .faceCooldownElapsed, tracks: [1]),
            Taken(ms: first + 1000, reason: .faceCooldownElapsed, tracks: [1]),
            Taken(ms: first + 1500, reason: .faceCooldownElapsed, tracks: [1]),
            Taken(ms: second, reason: .newFace, tracks: [2]), Taken(ms: second + 500, reason: .faceCooldownElapsed, tracks: [2]),
            Taken(ms: second + 1000, reason: .faceCooldownElapsed, tracks: [2]),
            Taken(ms: second + 1500, reason: .faceCooldownElapsed, tracks: [2]),
        ])

        // Global cooldown of 3.5 s: the returning face waits until 1.2 + 3.5 s.
        let global = try run(.init(globalCooldown: 3.5))
        #expect(global.taken == [Taken(ms: first, reason: .newFace, tracks: [1]), Taken(ms: first + 3500, reason: .newFace, tracks: [2])])

        // Every 0.75 s while a face is present (frames are 0.1 s apart): 1.2, 2.0, 2.8, then 4.2, 5.0, 5.8.
        let periodic = try run(.init(mode: .interval(seconds: 0.75)))
        #expect(periodic.taken == [first, first + 800, first + 1600].map { Taken(ms: $0, reason: .interval, tracks: [1]) }
            + [second, second + 800, second + 1600].map { Taken(ms: $0, reason: .interval, tracks: [2]) })

        // At most 3 snapshots in any 2 s (with a 0.5 s per-face cooldown): 2.7 s and 5.7 s are refused.
        let capped = try run(.init(faceCooldown: 0.5, maximumSnapshotsPerWindow: 3, snapshotWindow: 2))
        #expect(capped.taken == [
            Taken(ms: first, reason: .newFace, tracks: [1]), Taken(ms: first + 500, reason: .faceCooldownElapsed, tracks: [1]),
            Taken(ms: first + 1000, reason: .faceCooldownElapsed, tracks: [1]),
            Taken(ms: second, reason: .newFace, tracks: [2]), Taken(ms: second + 500, reason: .faceCooldownElapsed, tracks: [2]),
            Taken(ms: second + 1000, reason: .faceCooldownElapsed, tracks: [2]),
        ])
    }

    @Test func aFaceFreeClipTakesNoSnapshot() throws {
        // The same timeline with a photo of a rocket: things move in and out, no face.
        let none = try run(.init(faceCooldown: 0.5), scene: Self.scene(face: false))
        #expect(none.taken.isEmpty)
        #expect(none.files.isEmpty)
        let periodic = try run(.init(mode: .interval(seconds: 0.5)), scene: Self.scene(face: false))
        #expect(periodic.taken.isEmpty)
    }
}
