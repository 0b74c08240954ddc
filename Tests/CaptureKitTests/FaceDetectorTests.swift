import CVBridge
import CaptureKit
@testable import CaptureVision
import Foundation
import Testing

/// Fixture access shared by the face tests.
enum FaceFixtures {
    static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url = url.deletingLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }()
    static let faces = root.appendingPathComponent("Tests/Fixtures/faces")
    static let models = root.appendingPathComponent("Models")

    struct Entry: Decodable {
        struct Face: Decodable { let box: [Double] }
        let image: String
        let negative: Bool
        let faces: [Face]
        var boxes: [CGRect] { faces.map { CGRect(x: $0.box[0], y: $0.box[1], width: $0.box[2], height: $0.box[3]) } }
        /// The Kaggle face-mask images keep PASCAL-VOC boxes (eyebrows to chin, see LICENSES.md).
        var vocBoxes: Bool { image.contains("maksssksksss") }
    }
    struct Manifest: Decodable { let images: [Entry] }

    static let manifest: Manifest = {
        let data = try! Data(contentsOf: faces.appendingPathComponent("manifest.json"))
        return try! JSONDecoder().decode(Manifest.self, from: data)
    }()

    /// A detector with `configuration` over the package's models.
    static func detector(_ configuration: FaceDetector.Configuration = .standard) throws -> FaceDetector {
        try FaceDetector(configuration: configuration, modelsDirectory: models)
    }

    /// grace_hopper.jpg (512×600) as a sprite whose face box (176,121 181×211 in the photo) is
    /// `width` scene pixels wide and centred at `centre`; also where that box lands.
    static func graceHopper(width: Double, centredAt centre: CGPoint) -> (sprite: SyntheticScene.Sprite, face: CGRect) {
        let placed = SyntheticScene.Sprite.image(
            path: faces.appendingPathComponent("images/grace_hopper.jpg").path, imageSize: .init(width: 512, height: 600),
            placing: CGRect(x: 176, y: 121, width: 181, height: 211), width: width, centredAt: centre)
        return (placed.sprite, placed.feature)
    }

    static func image(_ name: String, as format: PixelFormat = .bgr) throws -> PixelBuffer {
        try ImageFolderSource.decode(faces.appendingPathComponent(name).path, as: format)
    }

    static func pixels(_ r: CGRect, _ image: PixelBuffer) -> CGRect {
        CGRect(
            x: r.minX * CGFloat(image.width), y: r.minY * CGFloat(image.height), width: r.width * CGFloat(image.width),
            height: r.height * CGFloat(image.height))
    }

    /// Whether a detection (pixels) matches a ground-truth box. YuNet boxes run forehead to chin;
    /// for VOC boxes the detection is first moved to that convention (top down 20 % of its
    /// height, height × 0.87: the mean offsets measured between the two on the fixtures), then
    /// IoU ≥ 0.5. For VOC boxes LICENSES.md also allows "centre inside the GT box"; we require it
    /// both ways (each box's centre inside the other) for the one heavily occluded face
    /// (maksssksksss593, a head seen from behind with a mask) where no convention reaches 0.5.
    static func matches(_ d: CGRect, _ truth: CGRect, voc: Bool) -> (iou: Bool, centres: Bool) {
        let adjusted = voc ? CGRect(x: d.minX, y: d.minY + 0.2 * d.height, width: d.width, height: 0.87 * d.height) : d
        let iou = adjusted.intersectionOverUnion(truth) >= 0.5
        let centres = voc && truth.contains(CGPoint(x: d.midX, y: d.midY)) && d.contains(CGPoint(x: truth.midX, y: truth.midY))
        return (iou, centres)
    }

    /// A CVBridge view of a buffer's pixels (for shim calls the tests make directly).
    static func bridge(_ b: PixelBuffer) -> cvb_image {
        cvb_image(
            data: b.baseAddress.assumingMemoryBound(to: UInt8.self), width: Int32(b.width), height: Int32(b.height),
            stride: Int32(b.bytesPerRow), format: b.pixelFormat.rawValue)
    }

    static func render(_ scene: SyntheticScene) throws -> PixelBuffer {
        let source = try SyntheticCameraSource(scene: scene, pacing: .asFastAsPossible)
        try source.open(format: source.formats[0], frameDuration: MediaTime.frameDuration(framesPerSecond: 30))
        defer { source.close() }
        return try #require(try source.nextFrame(isCancelled: { false })).pixelBuffer
    }
}

@Suite("FaceDetector")
struct FaceDetectorTests {
    let detector: FaceDetector

    init() throws {
        detector = try FaceFixtures.detector()
    }

    /// YuNet 2023 runs on any frame size: `YuNetNetwork` gives it an input padded to multiples of
    /// 32 and the shim pads with black at the bottom and right, so a 512×600 photo gives exactly
    /// the rows of the same photo padded by hand to 512×608. 2022mar runs at the image's own size.
    @Test func yuNet2023RunsOnAnyFrameSize() throws {
        var err = cvb_error()
        func load(_ name: String) throws -> YuNetNetwork {
            try #require(
                YuNetNetwork(
                    model: FaceFixtures.models.appendingPathComponent(name).path, width: 320, height: 320,
                    scoreThreshold: 0.5, nmsThreshold: 0.3, topK: 100, error: &err))
        }
        let n = try load(FaceDetector.yuNetModelName)
        let old = try load(FaceDetector.yuNet2022ModelName)
        #expect(n.is2023 && !old.is2023)
        let input2023 = YuNetNetwork.inputSize(width: 512, height: 600, is2023: true)
        let input2022 = YuNetNetwork.inputSize(width: 512, height: 600, is2023: false)
        #expect(input2023.width == 512 && input2023.height == 608)
        #expect(input2022.width == 512 && input2022.height == 600)

        let photo = try FaceFixtures.image("images/grace_hopper.jpg")
        #expect(photo.width == 512 && photo.height == 600)
        let found = try n.detect(photo, capacity: 16)
        #expect(found.count == 1)
        let face = try #require(found.first)
        let box = CGRect(x: face[0], y: face[1], width: face[2], height: face[3])
        #expect(box.intersectionOverUnion(CGRect(x: 176, y: 121, width: 181, height: 211)) >= 0.7, "\(box)")
        for k in 0..<5 { #expect(box.contains(CGPoint(x: face[4 + 2 * k], y: face[5 + 2 * k]))) }
        #expect(face[14] > 0.7 && face[14] <= 1)

        let padded = try PixelBuffer(width: 512, height: 608, pixelFormat: .bgr)
        try Imaging.fill(padded, red: 0, green: 0, blue: 0, "filling")
        try Imaging.blit(photo, into: padded, x: 0, y: 0, width: 512, height: 600, "drawing")
        #expect(try n.detect(padded, capacity: 16) == found)
    }

    @Test func findsModelsWithoutHelpAndUsesYuNet() throws {
        #expect(FaceDetector.locateModels() != nil)
        #expect(try FaceDetector().backend == .yuNet)
        // An explicit folder is the only place looked in (FaceModelSearch): a wrong one is an
        // error that names it, not a silent fallback to models elsewhere.
        do {
            _ = try FaceDetector(modelsDirectory: URL(fileURLWithPath: "/nonexistent"))
            Issue.record("a folder without models must not load any")
        } catch {
            #expect(error.code == .faceModelUnavailable && error.message.contains("/nonexistent/"), "\(error)")
        }
    }

    /// Every fixture face but one: the heavily masked face at the left of maksssksksss593.jpg
    /// scores 0.63 with YuNet-n, under the 0.7 the dev set chose.
    @Test func findsTheAnnotatedFixtureFaces() throws {
        var found = 0
        var byCentreOnly: [String] = []
        var missed: [(String, CGRect)] = []
        var total = 0
        for entry in FaceFixtures.manifest.images where !entry.negative {
            let image = try FaceFixtures.image(entry.image)
            let boxes = try detector.detect(in: image).map { FaceFixtures.pixels($0.bounds, image) }
            for truth in entry.boxes {
                total += 1
                let results = boxes.map { FaceFixtures.matches($0, truth, voc: entry.vocBoxes) }
                if results.contains(where: \.iou) {
                    found += 1
                } else if results.contains(where: \.centres) {
                    found += 1
                    byCentreOnly.append(entry.image)
                } else {
                    missed.append((entry.image, truth))
                }
            }
        }
        #expect(total == 15)
        #expect(found == total - 1)
        #expect(missed.count == 1 && missed.allSatisfy { $0.0 == "images/maksssksksss593.jpg" && $0.1.minX < 100 }, "\(missed)")
        // Only the documented occluded face may rely on the centre rule.
        #expect(byCentreOnly.allSatisfy { $0 == "images/maksssksksss593.jpg" } && byCentreOnly.count <= 1)
    }

    @Test func reportsNoFaceOnFaceFreeFixtures() throws {
        for entry in FaceFixtures.manifest.images where entry.negative {
            let faces = try detector.detect(in: try FaceFixtures.image(entry.image))
            #expect(faces.isEmpty, "false faces on \(entry.image): \(faces.map(\.bounds))")
        }
    }

    @Test(arguments: [(640, 480), (1280, 720)])
    func reportsNoFaceOnBlackNearBlackAndNoise(width: Int, height: Int) throws {
        let backgrounds: [SyntheticScene.Background] = [
            .color(red: 0, green: 0, blue: 0), .color(red: 8, green: 8, blue: 8),
            .noise(seed: 42, mean: 128, standardDeviation: 40), .noise(seed: 3, mean: 16, standardDeviation: 5),
        ]
        // YuNet 2022mar, which OpenCV's own FaceDetectorYN runs, is the model these frames trip.
        let plain = try FaceDetector(
            configuration: .plain(scoreThreshold: 0.5),
            yuNetModel: FaceFixtures.models.appendingPathComponent(FaceDetector.yuNet2022ModelName), haarCascade: nil)
        var plainFalse = 0
        for background in backgrounds {
            let frame = try FaceFixtures.render(SyntheticScene(size: .init(width: width, height: height), background: background))
            let faces = try detector.detect(in: frame)
            #expect(faces.isEmpty, "\(faces.count) false faces on \(background) at \(width)x\(height)")
            plainFalse += try plain.detect(in: frame).count
        }
        // The frames really provoke YuNet: plain YuNet 2022mar reports phantoms on them.
        #expect(plainFalse > 0)
    }

    @Test func acceptsGrayImages() throws {
        let gray = try FaceFixtures.image("images/grace_hopper.jpg", as: .gray)
        let faces = try detector.detect(in: gray)
        #expect(faces.count == 1)
        let box = FaceFixtures.pixels(try #require(faces.first).bounds, gray)
        #expect(box.intersectionOverUnion(CGRect(x: 176, y: 121, width: 181, height: 211)) >= 0.5)
    }

    @Test func fallsBackToHaarWhenYuNetCannotLoad() throws {
        let haarURL = FaceFixtures.models.appendingPathComponent(FaceDetector.haarCascadeName)
        for badYuNet in [
            URL(fileURLWithPath: "/nonexistent/face_detection_yunet_2022mar.onnx"),
            haarURL,  // exists but is not an ONNX model
        ] {
            let haar = try FaceDetector(yuNetModel: badYuNet, haarCascade: haarURL)
            #expect(haar.backend == .haar)
            let image = try FaceFixtures.image("images/grace_hopper.jpg")
            let faces = try haar.detect(in: image)
            let truth = CGRect(x: 176, y: 121, width: 181, height: 211)
            #expect(faces.contains { truth.contains(CGPoint(x: FaceFixtures.pixels($0.bounds, image).midX, y: FaceFixtures.pixels($0.bounds, image).midY)) })
            #expect(faces.allSatisfy { $0.landmarks.isEmpty && $0.rollAngle == nil })
        }
    }

    @Test func throwsWhenNoModelLoads() throws {
        let missing = URL(fileURLWithPath: "/nonexistent/model.onnx")
        let notACascade = FaceFixtures.faces.appendingPathComponent("manifest.json")
        #expect {
            _ = try FaceDetector(yuNetModel: missing, haarCascade: notACascade)
        } throws: { error in
            (error as? CaptureError)?.code == .faceModelUnavailable
        }
    }

    /// Rotates grace_hopper.jpg with OpenCV (`cvb_image_rotate_degrees`: positive = anticlockwise).
    func rotated(_ degrees: Double) throws -> PixelBuffer {
        let image = try FaceFixtures.image("images/grace_hopper.jpg")
        let out = try PixelBuffer(width: image.width, height: image.height, pixelFormat: .bgr)
        var src = FaceFixtures.bridge(image)
        var dst = FaceFixtures.bridge(out)
        var err = cvb_error()
        #expect(cvb_image_rotate_degrees(&src, &dst, degrees, &err) == 0)
        return out
    }

    @Test(arguments: [20.0, -20.0])
    func rollFollowsTheEyeLine(anticlockwise degrees: Double) throws {
        let upright = try #require(try detector.detect(in: try rotated(0)).first?.rollAngle)
        #expect(abs(upright) < 5)  // YuNet landmark noise on the untilted portrait
        // Anticlockwise image rotation is negative roll (roll is positive clockwise).
        // Landmark roll alone: right sign, magnitude overshooting (YuNet's landmarks lag on
        // tilted faces).
        let faces = try detector.detect(in: try rotated(degrees))
        #expect(faces.count == 1)
        let roll = try #require(faces.first?.rollAngle)
        #expect(roll.sign == (-degrees).sign && abs(roll) >= 15 && abs(roll) <= 50, "landmark roll \(roll) after \(degrees)°")
        // Refined upright: within 6°.
        let accurate = try FaceFixtures.detector(.accurateAngles)
        let refined = try #require(try accurate.detect(in: try rotated(degrees)).first?.rollAngle)
        #expect(abs(refined - (-degrees)) < 6, "refined roll \(refined) after rotating \(degrees)°")
    }

    @Test func yawSignFlipsWithMirroring() throws {
        let image = try FaceFixtures.image("images/camera.png")
        let mirrored = try PixelBuffer(width: image.width, height: image.height, pixelFormat: .bgr)
        var src = FaceFixtures.bridge(image)
        var dst = FaceFixtures.bridge(mirrored)
        var err = cvb_error()
        #expect(cvb_image_rotate_mirror(&src, &dst, 0, 1, &err) == 0)
        let yaw = try #require(try detector.detect(in: image).first?.yawAngle)
        let yawMirrored = try #require(try detector.detect(in: mirrored).first?.yawAngle)
        // The cameraman looks towards the image's right (nose tip right of the eye/mouth midline).
        #expect(yaw > 20)
        #expect(yawMirrored < -20)
        let frontal = try #require(try detector.detect(in: try FaceFixtures.image("images/grace_hopper.jpg")).first?.yawAngle)
        #expect(abs(frontal) < 15)
    }

    /// The default searches the photo and its mirror image and fuses the two, so a mirrored
    /// photo gives exactly the mirrored faces with the same scores (the same two searches run);
    /// one search alone scores the two views differently.
    @Test func aMirroredPhotoGivesTheMirroredFacesWithTheSameScores() throws {
        let image = try FaceFixtures.image("images/maksssksksss523.jpg")
        let mirrored = try PixelBuffer(width: image.width, height: image.height, pixelFormat: .bgr)
        var src = FaceFixtures.bridge(image)
        var dst = FaceFixtures.bridge(mirrored)
        var err = cvb_error()
        #expect(cvb_image_rotate_mirror(&src, &dst, 0, 1, &err) == 0)
        func sorted(_ faces: [FaceDetection]) -> [FaceDetection] { faces.sorted { $0.bounds.midX < $1.bounds.midX } }
        let faces = sorted(try detector.detect(in: image))
        let back = sorted(try detector.detect(in: mirrored)).reversed().map { f in
            CGRect(x: 1 - f.bounds.maxX, y: f.bounds.minY, width: f.bounds.width, height: f.bounds.height)
        }
        let scores = sorted(try detector.detect(in: mirrored)).reversed().map(\.confidence)
        #expect(faces.count == 2 && back.count == 2)
        for (f, (b, score)) in zip(faces, zip(back, scores)) {
            #expect(f.bounds.intersectionOverUnion(b) > 0.999, "\(f.bounds) vs mirrored \(b)")
            #expect(abs(f.confidence - score) < 1e-6)
        }
        var single = FaceDetector.Configuration.standard
        single.searchesMirroredImage = false
        let one = try FaceFixtures.detector(single)
        let a = sorted(try one.detect(in: image)).map(\.confidence)
        let m = sorted(try one.detect(in: mirrored)).reversed().map(\.confidence)
        #expect(a.count == m.count && zip(a, m).contains { abs($0 - $1) > 1e-4 }, "one search scored both views alike: \(a) \(m)")
    }

    /// The cat-face check (`catFaceVeto`) runs OpenCV's cat-face cascade where a face was found:
    /// it sees the cat in chelsea.png where the cascade finds its head, and gives every human
    /// face of the fixtures fewer votes than the veto, so the default drops none of them.
    @Test func theCatFaceCheckSeesACatAndLeavesTheFixtureFacesAlone() throws {
        let cat = try FaceFixtures.image("negatives/chelsea.png")
        #expect(try detector.catFaceVotes(in: cat, box: CGRect(x: 214, y: 193, width: 100, height: 100)) >= 1)
        let veto = try #require(FaceDetector.Configuration.standard.catFaceVeto)
        var unchecked = FaceDetector.Configuration.standard
        unchecked.catFaceVeto = nil
        let plain = try FaceFixtures.detector(unchecked)
        var faces = 0
        for entry in FaceFixtures.manifest.images where !entry.negative {
            let image = try FaceFixtures.image(entry.image)
            let found = try plain.detect(in: image)
            for face in found {
                let votes = try detector.catFaceVotes(in: image, box: FaceFixtures.pixels(face.bounds, image))
                #expect(votes < veto, "\(entry.image): \(votes) cat-face votes")
                faces += 1
            }
            #expect(try detector.detect(in: image).count == found.count, "\(entry.image)")
        }
        #expect(faces >= 14)
    }

    /// Fusion: a face both searches found keeps the mean of its scores and a score-weighted
    /// box; one only a single search found keeps half its score; a candidate from the mirror
    /// image comes back with the person's eyes and mouth corners in YuNet's order.
    @Test func fusionAveragesAgreeingSearchesAndHalvesALoneOne() {
        func marks(_ x: CGFloat) -> [CGPoint] {
            [CGPoint(x: x + 3, y: 4), CGPoint(x: x + 7, y: 4), CGPoint(x: x + 5, y: 6), CGPoint(x: x + 3.5, y: 8), CGPoint(x: x + 6.5, y: 8)]
        }
        let a = FaceDetector.Candidate(box: CGRect(x: 10, y: 0, width: 10, height: 12), landmarks: marks(10), score: 0.9)
        let b = FaceDetector.Candidate(box: CGRect(x: 11, y: 0, width: 10, height: 12), landmarks: marks(11), score: 0.6)
        let lone = FaceDetector.Candidate(box: CGRect(x: 60, y: 0, width: 10, height: 12), landmarks: marks(60), score: 0.8)
        let fused = FaceDetector.fuse([[a, lone], [b]], minimumIoU: 0.5).sorted { $0.box.minX < $1.box.minX }
        #expect(fused.count == 2)
        #expect(abs(fused[0].score - 0.75) < 1e-9)
        #expect(abs(Double(fused[0].box.minX) - (10 * 0.9 + 11 * 0.6) / 1.5) < 1e-9)
        #expect(abs(fused[1].score - 0.4) < 1e-9)
        let mirrored = a.mirrored(width: 100)
        #expect(mirrored.box == CGRect(x: 80, y: 0, width: 10, height: 12))
        let m = mirrored.landmarks ?? []
        // Right eye (image left) first: the mirror of the left eye at x 17 is at 83.
        #expect(m.map(\.x) == [83, 87, 85, 83.5, 86.5])
        #expect(m[0].x < m[1].x && m[3].x < m[4].x)
    }

    /// maksssksksss523.jpg mirrored: YuNet 2022mar put a mouth corner of the left face (tilted
    /// ~27°) outside its box, so the landmark geometry check needed an upright second look to
    /// keep it. YuNet-n reads those landmarks right: both faces pass the check (now optional)
    /// without a second look, and the tilted one reports its roll.
    @Test func theTiltedFaceThatFooled2022marPassesTheGeometryCheck() throws {
        let image = try FaceFixtures.image("images/maksssksksss523.jpg")
        let mirrored = try PixelBuffer(width: image.width, height: image.height, pixelFormat: .bgr)
        var src = FaceFixtures.bridge(image)
        var dst = FaceFixtures.bridge(mirrored)
        var err = cvb_error()
        #expect(cvb_image_rotate_mirror(&src, &dst, 0, 1, &err) == 0)
        #expect(try detector.detect(in: mirrored).count == 2)
        var checked = FaceDetector.Configuration.standard
        checked.checksLandmarkGeometry = true
        checked.uprightRecheckScore = nil
        let faces = try FaceFixtures.detector(checked).detect(in: mirrored)
        #expect(faces.count == 2)
        for face in faces {
            let box = face.bounds.insetBy(dx: -0.1 * face.bounds.width, dy: -0.1 * face.bounds.height)
            #expect(face.landmarks.allSatisfy { box.contains($0) })
        }
        // The tilted face (mirrored: clockwise in the image) has a clear positive roll.
        #expect(faces.contains { ($0.rollAngle ?? 0) > 10 })
    }

    /// `.realTime` (the metadata output's default) analyses a 1920x1080 frame at 640x360: a face
    /// 48 px wide (16 px there) is found as by `.standard`, a 20 px one (7 px there, under
    /// YuNet's floor) only by `.standard`, which runs at the frame's own size.
    @Test func realTimeGivesUpOnlyTheSmallestFacesAt1080p() throws {
        let realTime = try FaceFixtures.detector(.realTime)
        func found(_ d: FaceDetector, side: Double, at place: (Double, Double)) throws -> Bool {
            let (sprite, face) = FaceFixtures.graceHopper(width: side, centredAt: CGPoint(x: 1920 * place.0, y: 1080 * place.1))
            let frame = try FaceFixtures.render(
                SyntheticScene(
                    size: .init(width: 1920, height: 1080),
                    background: .image(path: FaceFixtures.faces.appendingPathComponent("negatives/rocket.jpg").path),
                    sprites: [sprite]))
            return try d.detect(in: frame).contains {
                FaceFixtures.pixels($0.bounds, frame).intersectionOverUnion(face) >= 0.5
            }
        }
        for place in [(0.3, 0.35), (0.7, 0.7)] {
            #expect(try found(realTime, side: 48, at: place))
            #expect(try found(detector, side: 48, at: place))
            #expect(try found(detector, side: 20, at: place))
            #expect(try !found(realTime, side: 20, at: place))
        }
    }

    @Test func regionOfInterestLimitsWhereFacesAreReported() throws {
        // Two faces: left at x 81…167, right at x 192…268 (pixels of a 400-wide image).
        let image = try FaceFixtures.image("images/maksssksksss523.jpg")
        let all = try detector.detect(in: image)
        #expect(all.count == 2)
        let left = CGRect(x: 0, y: 0, width: 0.45, height: 1)
        let right = CGRect(x: 0.46, y: 0, width: 0.54, height: 1)
        let inLeft = try detector.detect(in: image, regionOfInterest: left)
        let inRight = try detector.detect(in: image, regionOfInterest: right)
        #expect(inLeft.count == 1 && inRight.count == 1)
        #expect(inLeft.allSatisfy { left.contains(CGPoint(x: $0.bounds.midX, y: $0.bounds.midY)) })
        #expect(inRight.allSatisfy { right.contains(CGPoint(x: $0.bounds.midX, y: $0.bounds.midY)) })
        // Same place as the full-frame detection: ROI results are in whole-frame device space.
        for face in inLeft + inRight {
            #expect(all.contains { $0.bounds.intersectionOverUnion(face.bounds) > 0.7 })
        }
        #expect(try detector.detect(in: image, regionOfInterest: CGRect(x: 0.8, y: 0.8, width: 0.2, height: 0.2)).isEmpty)
    }
}
