import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

/// Following tracked faces between whole-frame scans: `FaceDetector.detect(in:near:)` on the
/// fixture photos, and `DefaultFaceStage`'s schedule in a session at 30 fps.
@Suite("Face following")
struct FaceFollowingTests {
    let detector: FaceDetector

    init() throws {
        detector = try FaceFixtures.detector()
    }

    @Test func searchingNearTheFacesOfAWholeScanFindsEachAgain() throws {
        var searched: [String] = []
        var faces = 0
        var missed: [String] = []
        for entry in FaceFixtures.manifest.images where !entry.negative {
            let image = try FaceFixtures.image(entry.image)
            let whole = try detector.detect(in: image)
            // nil: a face too large for a square around it to fit (the portraits); searched whole instead.
            guard let near = try detector.detect(in: image, near: whole.map(\.bounds)) else { continue }
            searched.append(entry.image)
            // Never a face the whole scan did not report, nor one moved off it.
            for n in near {
                let best = whole.map { $0.bounds.intersectionOverUnion(n.bounds) }.max() ?? 0
                #expect(best >= 0.6, "\(entry.image): near search reported \(n.bounds), IoU \(best) with the whole scan's faces")
            }
            for face in whole {
                faces += 1
                if !near.contains(where: { $0.bounds.intersectionOverUnion(face.bounds) >= 0.6 }) {
                    missed.append(entry.image)
                }
            }
        }
        #expect(searched.count == 4, "\(searched)")
        // 15 fixture faces less the portraits searched whole and the masked face of
        // maksssksksss593.jpg that YuNet-n scores under the threshold.
        #expect(faces == 6)
        // The one face that may not be found again is the documented hard case: a head seen from
        // behind with a mask, found whole only with its neighbours around it.
        #expect(missed.allSatisfy { $0 == "images/maksssksksss593.jpg" } && missed.count <= 1, "\(missed)")
    }

    @Test func nothingIsFoundNearAPlaceWithoutAFaceAndALargeFaceAsksForAWholeScan() throws {
        for entry in FaceFixtures.manifest.images where entry.negative {
            let image = try FaceFixtures.image(entry.image)
            let near = try detector.detect(in: image, near: [CGRect(x: 0.4, y: 0.4, width: 0.1, height: 0.1)])
            #expect(near?.isEmpty == true, "\(entry.image): \(near.map { $0.map(\.bounds) } ?? [])")
        }
        let portrait = try FaceFixtures.image("images/grace_hopper.jpg")
        #expect(try detector.detect(in: portrait, near: [CGRect(x: 0.3, y: 0.2, width: 0.4, height: 0.4)]) == nil)
        #expect(try detector.detect(in: portrait, near: []) == [])
    }

    @Test func aNeighbourCutByTheSearchSquareIsNotReportedWithACutBox() throws {
        // Two faces 170 px apart (centres) at 1280x720: each one's 2.5 × 100 px square takes in
        // part of the other.
        let sprites = [400.0, 570.0].map { x in FaceFixtures.graceHopper(width: 100, centredAt: CGPoint(x: x, y: 360)).sprite }
        let image = try FaceFixtures.render(
            SyntheticScene(
                size: .init(width: 1280, height: 720), frameRate: 30, frameCount: 1,
                background: .color(red: 120, green: 120, blue: 120), sprites: sprites))
        let whole = try detector.detect(in: image)
        #expect(whole.count == 2)
        for face in whole {
            let near = try #require(try detector.detect(in: image, near: [face.bounds]))
            #expect(!near.isEmpty)
            for n in near {
                let best = whole.map { $0.bounds.intersectionOverUnion(n.bounds) }.max() ?? 0
                #expect(best >= 0.6, "a face near \(face.bounds) came back as \(n.bounds)")
            }
        }
    }

    /// A face crossing a 640x480 frame at 30 fps for 2 s; at 1 s a second one appears, and a
    /// small third one low in the frame (30 px: too small for the coarse part of a search).
    func scene() -> SyntheticScene {
        let face = Fixtures.faceImage("grace_hopper.jpg")
        return SyntheticScene(
            size: .init(width: 640, height: 480), frameRate: 30, frameCount: 60,
            background: .color(red: 120, green: 120, blue: 120),
            sprites: [
                .init(content: .image(path: face), size: .init(width: 120, height: 140), origin: CGPoint(x: 40, y: 60),
                      velocity: CGSize(width: 150, height: 0), appearsAt: 0, disappearsAt: 10),
                .init(content: .image(path: face), size: .init(width: 90, height: 105), origin: CGPoint(x: 420, y: 200),
                      velocity: .zero, appearsAt: 1, disappearsAt: 10),
                {
                    var small = FaceFixtures.graceHopper(width: 30, centredAt: CGPoint(x: 200, y: 420)).sprite
                    small.appearsAt = 1
                    return small
                }(),
            ])
    }

    func run(scanInterval: Double) throws -> (MetadataRecorder, CaptureMetadataOutput, DefaultFaceStage) {
        let stage = DefaultFaceStage(detector: detector)
        let output = CaptureMetadataOutput(faceStage: stage, codeStage: nil)
        let recorder = try MetadataRecorder.record(scene(), through: output, types: [.face]) {
            $0.faceScanInterval = scanInterval
        }
        return (recorder, output, stage)
    }

    @Test func aTrackedFaceIsReportedInEveryFrameWhileEachWholeSearchIsSpreadOverThreeFrames() throws {
        let (recorder, output, stage) = try run(scanInterval: 0.1)
        #expect(output.processedFrameCount == 60)
        // Frame 0 is searched whole; from frame 3 on a search starts every 0.1 s (3 frames) and
        // is spread over them; tracked faces are followed in every frame after the first.
        #expect(stage.searchCounts == .init(wholeFrame: 1, parts: 57, nearTrackedFaces: 59))
        let faces = recorder.frames.map { $0.compactMap { $0 as? MetadataFaceObject } }
        // A new face in video enters on its third frame (`FaceTracker.Configuration.video`):
        // frames 0 and 1 report none.
        #expect(faces.count == 58)
        #expect(abs((faces.first?.first?.time.seconds ?? -1) - 2.0 / 30) < 1e-6)
        let entered = recorder.events.compactMap { if case .faceEntered(let f) = $0 { f } else { nil } }
        #expect(entered.count == 3, "\(recorder.events.map(\.name))")
        guard entered.count == 3 else { return }
        // The moving face: one ID in every frame, its box on the sprite (centre 100 + 150 t, 130).
        for frame in faces {
            let moving = frame.filter { $0.faceID == entered[0].faceID }
            #expect(moving.count == 1)
            if let f = moving.first {
                let t = f.time.seconds
                #expect(abs(f.bounds.midX * 640 - (100 + 150 * t)) < 20, "at \(t): \(f.bounds.midX * 640)")
                #expect(abs(f.bounds.midY * 480 - 130) < 25)
            }
        }
        // The faces that appear at 1 s are found by the search that starts at 1 s, within its
        // three frames, followed from then on, and enter two frames after they were found.
        for face in entered.dropFirst() {
            #expect(face.time.seconds >= 1 && face.time.seconds < 1.1 + 2.0 / 30, "entered at \(face.time.seconds)")
        }
        #expect(faces.filter { $0.first?.time.seconds ?? 0 >= 1.1 }.allSatisfy { $0.count == 3 })
        #expect(recorder.events.filter { if case .faceLeft = $0 { true } else { false } }.count == 3)
    }

    @Test func aScanIntervalOfZeroSearchesEveryFrameWhole() throws {
        let (recorder, _, stage) = try run(scanInterval: 0)
        #expect(stage.searchCounts == .init(wholeFrame: 60, parts: 0, nearTrackedFaces: 0))
        // Every frame but the first two (the hold before a new face enters) reports the face.
        #expect(recorder.frames.count == 58)
    }

    @Test func theThreePartsOfASearchFindWhatAWholeSearchFinds() throws {
        // Faces of 36 to 200 px at 1280x720 (`.realTime` finds faces from about 32 px there),
        // three of them across the line between the halves.
        let placed: [(width: Double, x: Double, y: Double)] = [
            (36, 100, 100), (40, 1000, 600), (60, 300, 360), (90, 640, 350), (200, 950, 370), (40, 1180, 372),
        ]
        let image = try FaceFixtures.render(
            SyntheticScene(
                size: .init(width: 1280, height: 720), frameRate: 30, frameCount: 1,
                background: .color(red: 120, green: 120, blue: 120),
                sprites: placed.map { FaceFixtures.graceHopper(width: $0.width, centredAt: CGPoint(x: $0.x, y: $0.y)).sprite }))
        let detector = try FaceFixtures.detector(.realTime)
        let whole = try detector.detect(in: image)
        #expect(whole.count >= placed.count - 1)
        var parts: [FaceDetection] = []
        for part in FaceDetector.ScanPart.allCases {
            parts += try detector.detect(in: image, part: part)
        }
        for face in whole {
            let best = parts.map { $0.bounds.intersectionOverUnion(face.bounds) }.max() ?? 0
            #expect(best >= 0.6, "the face at \(face.bounds) came back with IoU \(best)")
        }
        for face in parts {
            let best = whole.map { $0.bounds.intersectionOverUnion(face.bounds) }.max() ?? 0
            #expect(best >= 0.6, "a part reported \(face.bounds), IoU \(best) with the whole search's faces")
        }
        // A face cut by a half's inner edge is not reported from that half.
        let upper = try detector.detect(in: image, part: .upperHalf)
        #expect(!upper.contains { $0.bounds.maxY * 720 > 360 + 64 - 16 })
    }

    @Test func preparingForAFrameSizeChangesNoResult() throws {
        let fresh = try FaceFixtures.detector(.realTime)
        let prepared = try FaceFixtures.detector(.realTime)
        try prepared.prepare(width: 1280, height: 720)
        for entry in FaceFixtures.manifest.images {
            let image = try FaceFixtures.image(entry.image)
            #expect(try prepared.detect(in: image) == fresh.detect(in: image), "\(entry.image)")
        }
    }
}
