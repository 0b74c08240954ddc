import CaptureKit
import Foundation
import Testing
import AppTestSupport

/// `cvcam preview` in a real browser: three preview servers (the built binary, on free loopback
/// ports) and one headless Chromium driven by `Tests/Browser/preview_browser.py` (Debian's
/// chromium, chromium-driver and python3-selenium; `Tools/setup` installs them). The script
/// only measures what the page drew; every expected number here comes from
/// `CaptureVideoPreviewLayer`. Screenshots are kept in `.build/artifacts/preview/`.
///
/// Skipped, with the reason, when the browser or the driver is not installed.
/// The browser and load suites start preview servers that detect faces in real time; they run
/// one after the other, so neither takes the other's CPU.
@Suite(.serialized) enum PreviewEndToEnd {}

extension PreviewEndToEnd {
@Suite(.serialized, .enabled(if: PreviewBrowserRun.available, "needs /usr/bin/chromium, /usr/bin/chromedriver and python3-selenium (Tools/setup installs them)"))
struct PreviewBrowserTests {
    /// The still scene's frame, and the face photo's ground truth (Tests/Fixtures/faces/manifest.json:
    /// astronaut.png, 512x512, face at 178,58 94x117), in device space: the background is scaled to
    /// the frame, so normalised coordinates carry over.
    static let stillFrame = CaptureDevice.Dimensions(width: 640, height: 480)
    static let groundTruth = CGRect(x: 178.0 / 512, y: 58.0 / 512, width: 94.0 / 512, height: 117.0 / 512)

    static func layer(_ w: Double, _ h: Double, _ gravity: String, _ rotation: Double, _ mirrored: Bool,
                      frame: CaptureDevice.Dimensions = stillFrame) throws -> CaptureVideoPreviewLayer {
        try CaptureVideoPreviewLayer(
            bounds: CGRect(x: 0, y: 0, width: w, height: h),
            videoGravity: try #require(CaptureVideoPreviewLayer.VideoGravity(rawValue: gravity)),
            videoRotationAngle: rotation, isVideoMirrored: mirrored, frameDimensions: frame)
    }

    static func rect(_ values: [Double]) -> CGRect { CGRect(x: values[0], y: values[1], width: values[2], height: values[3]) }

    static func within(_ a: CGRect, _ b: CGRect, _ tolerance: Double) -> Bool {
        abs(Double(a.minX - b.minX)) <= tolerance && abs(Double(a.minY - b.minY)) <= tolerance
            && abs(Double(a.width - b.width)) <= tolerance && abs(Double(a.height - b.height)) <= tolerance
    }

    @Test func theBrowserRunHadNoErrors() throws {
        let run = try PreviewBrowserRun.shared.get()
        #expect(run.errors.isEmpty, "\(run.errors)")
    }

    /// For 2 view sizes x 3 gravities x 4 rotations x mirroring, every face box the page drew
    /// (its bounding client rect in the view) and the image's own rect lie within 2 px of what
    /// the library's conversions give for the device-space box the server reported.
    @Test func overlayAndVideoAreWhereTheLibraryPutsThem() throws {
        let run = try PreviewBrowserRun.shared.get()
        #expect(run.geometry.count == 48)
        for combo in run.geometry {
            let layer = try Self.layer(combo.width, combo.height, combo.gravity, combo.rotation, combo.mirrored)
            let name = "\(combo.width)x\(combo.height) \(combo.gravity) \(combo.rotation)° mirrored \(combo.mirrored)"
            let video = layer.layerRectConverted(fromMetadataOutputRect: CGRect(x: 0, y: 0, width: 1, height: 1))
            #expect(Self.within(Self.rect(combo.video), video, 2), "\(name): video drawn at \(combo.video), library \(video)")
            #expect(!combo.faces.isEmpty, "\(name): no face drawn")
            for face in combo.faces {
                let expected = layer.layerRectConverted(fromMetadataOutputRect: Self.rect(face.device))
                #expect(
                    Self.within(Self.rect(face.drawn), expected, 2),
                    "\(name): face \(face.id) drawn at \(face.drawn), library \(expected)")
            }
        }
    }

    /// The device-space box the page was sent is the face the scene drew (the detector's
    /// accuracy, not the page's: overlap above 0.7 with the fixture's ground truth).
    @Test func reportedFaceIsTheSceneFace() throws {
        let run = try PreviewBrowserRun.shared.get()
        let device = try #require(run.geometry.first?.faces.first?.device)
        let box = Self.rect(device)
        let overlap = box.intersection(Self.groundTruth)
        let iou = Double(overlap.width * overlap.height) / Double(box.width * box.height + Self.groundTruth.width * Self.groundTruth.height - overlap.width * overlap.height)
        #expect(iou > 0.7, "reported \(box), ground truth \(Self.groundTruth), IoU \(iou)")
    }

    /// Frames reach the browser (the image's natural size, changing pixels, a rising counter)
    /// and the face box moves right with the face.
    @Test func framesArriveAndTheOverlayFollowsTheMovingFace() throws {
        let run = try PreviewBrowserRun.shared.get()
        let moving = try #require(run.moving)
        #expect(moving.natural == [640, 480])
        #expect(moving.samples.count == 4)
        #expect(Set(moving.samples.map(\.pixels)).count >= 3, "the image did not change: \(moving.samples.map(\.pixels))")
        let encoded = moving.samples.map(\.encoded)
        #expect(zip(encoded, encoded.dropFirst()).allSatisfy { $0 < $1 }, "frame counter \(encoded)")
        let xs = moving.samples.map { $0.face[0] }
        #expect(zip(xs, xs.dropFirst()).allSatisfy { $0 < $1 }, "face box x \(xs) does not follow the face moving right")
        for sample in moving.samples {
            let expected = try Self.layer(640, 480, "resizeAspect", 0, false).layerRectConverted(fromMetadataOutputRect: Self.rect(sample.device))
            #expect(Self.within(Self.rect(sample.face), expected, 2))
        }
    }

    /// A click at layer (400, 150) in a 640x480 fit view, rotated 90° and mirrored: the server
    /// answers with `captureDevicePointConverted(fromLayerPoint:)`; converted back it is the
    /// clicked pixel. A synthetic input has no point of interest, and the page says so.
    @Test func clickIsConvertedToTheDevicePoint() throws {
        let run = try PreviewBrowserRun.shared.get()
        let tap = try #require(run.tap)
        let layer = try Self.layer(tap.view[0], tap.view[1], tap.gravity, tap.rotation, tap.mirrored)
        let back = layer.layerPointConverted(fromCaptureDevicePoint: CGPoint(x: tap.device[0], y: tap.device[1]))
        #expect(abs(Double(back.x) - tap.layer[0]) <= 1.5 && abs(Double(back.y) - tap.layer[1]) <= 1.5, "clicked \(tap.layer), device \(tap.device) is layer \(back)")
        let expected = layer.captureDevicePointConverted(fromLayerPoint: CGPoint(x: tap.layer[0], y: tap.layer[1]))
        #expect(abs(Double(expected.x) - tap.device[0]) < 0.01 && abs(Double(expected.y) - tap.device[1]) < 0.01)
        #expect(tap.set == "false")
        #expect(tap.text.contains("not supported"))
    }

    /// A drag over the left half becomes the rect of interest
    /// (`metadataOutputRectConverted(fromLayerRect:)`), and the code outside it stops being
    /// reported while the one inside stays.
    @Test func dragSetsTheRectOfInterest() throws {
        let run = try PreviewBrowserRun.shared.get()
        let drag = try #require(run.drag)
        let layer = try Self.layer(drag.view[0], drag.view[1], "resizeAspect", 0, false, frame: .init(width: 640, height: 240))
        let expected = layer.metadataOutputRectConverted(fromLayerRect: Self.rect(drag.layer))
        #expect(Self.within(Self.rect(drag.roi), expected, 2.0 / 240), "rect of interest \(drag.roi), library \(expected)")
        #expect(drag.codesAfter == ["LEFT-CODE"])
        // Sampled for 3 s after: the code outside never came back; the one inside was still shown.
        #expect(Set(drag.codesLater.flatMap { $0 }) == ["LEFT-CODE"], "\(drag.codesLater)")
    }

    /// A payload of HTML and script is shown as text: no element made from it, no alert.
    @Test func hostilePayloadIsShownAsText() throws {
        let run = try PreviewBrowserRun.shared.get()
        let codes = try #require(run.codesBefore)
        #expect(codes.payloads.contains(PreviewBrowserRun.hostile))
        #expect(codes.hostileAsText)
        #expect(codes.imgCount == 1, "only the video is an <img>")
        #expect(!codes.alert)
    }

    /// The photo button takes a photo (`capturePhoto`) the page links to, as a JPEG.
    @Test func photoButtonOffersAJPEG() throws {
        let run = try PreviewBrowserRun.shared.get()
        let photo = try #require(run.photo)
        #expect(photo.status == 200)
        #expect(photo.type == "image/jpeg")
        #expect(photo.head == [255, 216, 255])
        #expect((photo.size ?? 0) > 10_000)
    }

    /// A camera of `cvcam serve` restarted by a reload (at another size): the page's socket is
    /// closed, it reconnects by itself and its video is the new session's.
    @Test func aServeCamerasPageFollowsItsRestartedSession() throws {
        let run = try PreviewBrowserRun.shared.get()
        guard MosquittoTestBroker.missing == nil else { return }  // no broker to run serve against (said when it started)
        let serve = try #require(run.serve, "errors: \(run.errors)")
        #expect(serve.before == [320, 240])
        #expect(serve.after == [480, 360])
        #expect(serve.statuses.contains("live"))
    }

    @Test func screenshotsAreKept() throws {
        _ = try PreviewBrowserRun.shared.get()
        for name in ["preview-still.png", "preview-moving.png", "preview-codes.png"] {
            let path = PreviewBrowserRun.artifacts.appendingPathComponent(name).path
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            #expect(size > 10_000, "\(path)")
        }
    }
}

}

/// One browser session over three preview servers, shared by the tests above.
struct PreviewBrowserRun: Decodable, Sendable {
    struct Face: Decodable, Sendable {
        var id: Int
        var drawn: [Double]
        var device: [Double]
    }
    struct Combo: Decodable, Sendable {
        var width: Double, height: Double, gravity: String, rotation: Double, mirrored: Bool
        var video: [Double]
        var faces: [Face]
    }
    struct Sample: Decodable, Sendable {
        var face: [Double]
        var device: [Double]
        var pixels: Int
        var encoded: Int
    }
    struct Moving: Decodable, Sendable {
        var natural: [Int]
        var samples: [Sample]
    }
    struct Tap: Decodable, Sendable {
        var layer: [Double], view: [Double], gravity: String, rotation: Double, mirrored: Bool
        var device: [Double]
        var set: String
        var text: String
    }
    struct Photo: Decodable, Sendable {
        var status: Int?, type: String?, size: Int?, head: [Int]?
    }
    struct Codes: Decodable, Sendable {
        var payloads: [String], imgCount: Int, hostileAsText: Bool, alert: Bool
    }
    struct Drag: Decodable, Sendable {
        var layer: [Double], view: [Double], roi: [Double], codesAfter: [String], codesLater: [[String]]
    }

    var errors: [String]
    var geometry: [Combo] = []
    var moving: Moving?
    var tap: Tap?
    var photo: Photo?
    var codesBefore: Codes?
    var drag: Drag?
    struct Serve: Decodable, Sendable {
        var before: [Int], after: [Int], statuses: [String]
    }
    var serve: Serve?

    enum CodingKeys: String, CodingKey { case errors, geometry, moving, tap, photo, codesBefore, drag, serve }
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        errors = try c.decode([String].self, forKey: .errors)
        geometry = try c.decodeIfPresent([Combo].self, forKey: .geometry) ?? []
        moving = try c.decodeIfPresent(Moving.self, forKey: .moving)
        tap = try c.decodeIfPresent(Tap.self, forKey: .tap)
        photo = try c.decodeIfPresent(Photo.self, forKey: .photo)
        codesBefore = try c.decodeIfPresent(Codes.self, forKey: .codesBefore)
        drag = try c.decodeIfPresent(Drag.self, forKey: .drag)
        serve = try c.decodeIfPresent(Serve.self, forKey: .serve)
    }

    static let hostile = "<img src=x onerror=alert(1)>"
    static let artifacts = CLI.packageRoot.appendingPathComponent(".build/artifacts/preview")
    static let script = CLI.packageRoot.appendingPathComponent("Tests/Browser/preview_browser.py")

    static var available: Bool {
        let files = ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/python3"]
        guard files.allSatisfy(FileManager.default.isExecutableFile(atPath:)) else { return false }
        return (try? CLI.run(["-c", "import selenium"], executable: URL(fileURLWithPath: "/usr/bin/python3")))?.status == 0
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Started once, on first use.
    static let shared: Result<PreviewBrowserRun, Failure> = {
        do { return .success(try run()) } catch let failure as Failure { return .failure(failure) } catch {
            return .failure(Failure(description: "\(error)"))
        }
    }()

    private static func run() throws -> PreviewBrowserRun {
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        let faces = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/faces/images").path
        let scenes = [
            "still": "synthetic:size=640x480,fps=10,background=\(faces)/astronaut.png",
            // 20 px/s: the face stays in view for 40 s of the run, however long a loaded machine
            // takes to start the three servers.
            "moving": "synthetic:size=640x480,fps=15,background=gray,image=\(faces)/grace_hopper.jpg,speed=20",
            "codes": "synthetic:size=640x240,fps=10,background=gray,qr=LEFT-CODE,qr=\(hostile)",
        ]
        var servers: [String: RunningCLI] = [:]
        defer { for server in servers.values { server.kill() } }
        for (name, scene) in scenes {
            servers[name] = try RunningCLI(["preview", "--input", scene, "--listen", "127.0.0.1:0"], environment: [:])
        }
        var config: [String: String] = ["artifacts": artifacts.path, "hostile": hostile]
        for (name, server) in servers {
            guard let line = server.waitForLine(containing: "preview: ", timeout: 60) else {
                throw Failure(description: "the \(name) preview did not start: \(server.errorOutput)")
            }
            config[name] = String(line.dropFirst("preview: ".count))
        }
        var object: [String: Any] = config
        // A `cvcam serve` camera whose session the page must follow through a restart.
        let broker = try MosquittoTestBroker.start()
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        var daemon: ServeProcess?
        defer { daemon?.signal(SIGKILL) }
        if let broker {
            let mqtt = try ServeProcess.mqttSection(broker, dir: dir)
            let camera = { (size: String) in
                mqtt + "\npreview: {listen: 127.0.0.1:0}\ncameras:\n  - name: door\n"
                    + "    input: \"synthetic:size=\(size),fps=10,background=\(faces)/astronaut.png\"\n    faces: {}\n"
            }
            let file = dir.appendingPathComponent("serve.yaml"), restarted = dir.appendingPathComponent("restarted.yaml")
            try camera("320x240").write(to: file, atomically: true, encoding: .utf8)
            try camera("480x360").write(to: restarted, atomically: true, encoding: .utf8)
            let running = try ServeProcess(config: file.path)
            daemon = running
            let end = Date(timeIntervalSinceNow: 60)
            var port: Int?
            while port == nil, Date() < end, running.process.isRunning {
                port = running.stdout.firstMatch(of: /preview: http:\/\/127\.0\.0\.1:(\d+)\//).flatMap { Int($0.1) }
                if port == nil { Thread.sleep(forTimeInterval: 0.05) }
            }
            guard let port else { throw Failure(description: "serve did not start its preview: \(running.stderr)") }
            object["serve"] = "http://127.0.0.1:\(port)/cameras/door"
            object["restart"] = [
                "/bin/sh", "-c", "cp '\(restarted.path)' '\(file.path)' && kill -HUP \(running.process.processIdentifier)",
            ]
        }
        let json = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        let result = try CLI.run([script.path, json], executable: URL(fileURLWithPath: "/usr/bin/python3"))
        withExtendedLifetime(broker) {}  // the broker serve reports to stays up until the script is done
        guard result.status == 0, let data = result.lines.last?.data(using: .utf8) else {
            throw Failure(description: "the browser script failed (\(result.status)): \(result.stderr)")
        }
        return try JSONDecoder().decode(PreviewBrowserRun.self, from: data)
    }
}
