import CaptureKit
import Foundation
import Synchronization
import Testing

@testable import CaptureJobs
@testable import CapturePreview
import AppTestSupport

/// The preview's motion boxes: the moving regions of `CaptureMetadataOutput.motionDetection`,
/// converted by `CaptureVideoPreviewLayer` like the face boxes, bounded and numeric on the
/// WebSocket, and gone when the motion ends.
@Suite(.serialized) struct PreviewMotionTests {
    /// A gray 320x240 scene at 10 fps, still for its first second; then the astronaut photo
    /// (80x80) crosses it left to right at 80 px/s (visible from 1 s to 6 s) and it is still
    /// again; the whole plays every 9 s, so a client that connects at any moment sees still,
    /// moving, still.
    static let face = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/faces/images/astronaut.png").path
    static let spec = "synthetic:size=320x240,fps=10,background=gray,image=\(face),appear=1,speed=80,repeat=9"
    static let motionOptions = ["--motion", "--motion-end-delay", "0.5"]

    /// Where the scene's picture is at media time `t`, in device space (clipped to the frame),
    /// or nil when it is out of view: the ground truth, from the same parser `cvcam` uses.
    static func truth(at t: Double) throws -> CGRect? {
        let scene = try SyntheticSpec.parse(String(spec.dropFirst("synthetic:".count)))
        let frame = CGRect(x: 0, y: 0, width: scene.size.width, height: scene.size.height)
        guard let r = scene.sprites.first?.rect(at: t)?.intersection(frame), !r.isNull, r.width > 0, r.height > 0 else { return nil }
        return CGRect(x: r.minX / frame.width, y: r.minY / frame.height, width: r.width / frame.width, height: r.height / frame.height)
    }

    static func iou(_ a: CGRect, _ b: CGRect) -> Double {
        let i = a.intersection(b)
        guard !i.isNull else { return 0 }
        let overlap = Double(i.width * i.height)
        return overlap / (Double(a.width * a.height + b.width * b.height) - overlap)
    }

    static func rect(_ any: Any?) -> CGRect? {
        guard let d = any as? [String: Double], let x = d["x"], let y = d["y"], let w = d["width"], let h = d["height"] else { return nil }
        return CGRect(x: x, y: y, width: w, height: h)
    }

    /// Whether no leaf of `value` is text (the motion message carries numbers only, so no
    /// string reaches the page through it).
    static func onlyNumbers(_ value: Any) -> Bool {
        switch value {
        case let d as [String: Any]: d.values.allSatisfy(onlyNumbers)
        case let a as [Any]: a.allSatisfy(onlyNumbers)
        case is String, is NSNull: false
        default: true
        }
    }

    /// A camera in a session that is never started: the observer is fed by hand.
    static func camera() throws -> (PreviewCamera, CaptureMetadataOutput, CaptureConnection) {
        let device = try CaptureDevice(
            syntheticScene: SyntheticScene(
                size: .init(width: 320, height: 240), frameRate: 10, frameCount: 1, background: .color(red: 0, green: 0, blue: 0)))
        let fixture = try UnstartedPreviewCamera(device: device)
        return (fixture.camera, fixture.metadata, fixture.connection)
    }

    /// A drawing is computed at one reading of the connection: while another thread turns
    /// mirroring on and off, every geometry's boxes are the conversion for the rotation and
    /// mirroring the same geometry names (a layer following the connection read it again at
    /// every call, and a page then drew a face box mirrored against its own settings).
    @Test func aDrawingIsConvertedForTheSettingsItNames() throws {
        let (camera, metadata, connection) = try Self.camera()
        let region = CGRect(x: 0.1, y: 0.2, width: 0.2, height: 0.3)
        camera.observer.metadataOutput(
            metadata, didOutput: [MetadataMotionObject(regions: [region], changedFraction: 0.1, time: .zero, inputID: camera.input.id)],
            from: connection)
        let view = PreviewCamera.View(width: 640, height: 480, gravity: .resizeAspect)
        let stop = Mutex(false)
        let flipping = Thread {
            var mirrored = false
            while !stop.withLock({ $0 }) {
                mirrored.toggle()
                try? camera.setConnection(rotation: 90, mirrored: mirrored)
            }
        }
        flipping.start()
        defer { stop.withLock { $0 = true } }
        var mismatches: [String] = []
        for _ in 0..<3000 {
            let g = try camera.geometry(for: view)
            let drawn = try #require(g.motion?.regions.first).bounds
            let layer = try CaptureVideoPreviewLayer(
                bounds: CGRect(x: 0, y: 0, width: 640, height: 480), videoGravity: .resizeAspect, videoRotationAngle: g.rotation,
                isVideoMirrored: g.mirrored, frameDimensions: .init(width: 320, height: 240))
            let expected = layer.layerRectConverted(fromMetadataOutputRect: region)
            if !PreviewEndToEnd.PreviewBrowserTests.within(CGRect(x: drawn.x, y: drawn.y, width: drawn.width, height: drawn.height), expected, 1e-9) {
                mismatches.append("mirrored \(g.mirrored): \(drawn) is not \(expected)")
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of 3000: \(mismatches.prefix(2))")
    }

    /// In process: each region is `layerRectConverted(fromMetadataOutputRect:)` of its device
    /// box for every gravity x rotation x mirroring and two view sizes; only the largest 16
    /// of 20 regions are sent, as numbers; a motion from another input is not drawn; a frame
    /// delivered without motion, and a motion's end, take the boxes away.
    @Test func motionRegionsAreConvertedBoundedAndCleared() throws {
        let (camera, metadata, connection) = try Self.camera()
        let regions = (0..<20).map { i in CGRect(x: 0.02 + 0.04 * Double(i), y: 0.1 + 0.01 * Double(i), width: 0.03, height: 0.2) }
        let motion = MetadataMotionObject(
            regions: regions, changedFraction: 0.25, time: MediaTime(seconds: 1.5), inputID: camera.input.id)
        let view = PreviewCamera.View(width: 640, height: 480, gravity: .resizeAspect)
        #expect(try camera.geometry(for: view).motion == nil, "no motion before any")
        camera.observer.metadataOutput(metadata, didOutput: [motion], from: connection)
        var checked = 0
        for (w, h) in [(640.0, 480.0), (300.0, 500.0)] {
            for gravity in CaptureVideoPreviewLayer.VideoGravity.allCases {
                for rotation in [0.0, 90, 180, 270] {
                    for mirrored in [false, true] {
                        try camera.setConnection(rotation: rotation, mirrored: mirrored)
                        let view = PreviewCamera.View(width: w, height: h, gravity: gravity)
                        let json = PreviewMessage.json(try camera.geometry(for: view))
                        let message = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
                        let sent = try #require(message["motion"] as? [String: Any], "\(json)")
                        #expect(Self.onlyNumbers(sent), "\(sent)")
                        #expect(sent["time"] as? Double == 1.5 && sent["changedFraction"] as? Double == 0.25)
                        let boxes = try #require(sent["regions"] as? [[String: Any]])
                        #expect(boxes.count == PreviewMessage.maximumMotionRegions)
                        let layer = try CaptureVideoPreviewLayer(
                            bounds: CGRect(x: 0, y: 0, width: w, height: h), videoGravity: gravity, videoRotationAngle: rotation,
                            isVideoMirrored: mirrored, frameDimensions: .init(width: 320, height: 240))
                        for (box, device) in zip(boxes, regions) {
                            // JSON's decimal text brings the numbers back within an ulp or two.
                            #expect(PreviewEndToEnd.PreviewBrowserTests.within(try #require(Self.rect(box["deviceBounds"])), device, 1e-12))
                            let drawn = try #require(Self.rect(box["bounds"]))
                            let expected = layer.layerRectConverted(fromMetadataOutputRect: device)
                            #expect(
                                PreviewEndToEnd.PreviewBrowserTests.within(drawn, expected, 1e-9),
                                "\(w)x\(h) \(gravity) \(rotation) \(mirrored): \(drawn) is not \(expected)")
                        }
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == 48)

        // Another input's motion is not this camera's.
        let other = try CaptureDeviceInput(
            device: CaptureDevice(syntheticScene: SyntheticScene(size: .init(width: 320, height: 240), frameCount: 1)))
        let foreign = MetadataMotionObject(regions: [regions[0]], changedFraction: 0.1, time: .zero, inputID: other.id)
        camera.observer.metadataOutput(metadata, didOutput: [foreign], from: connection)
        #expect(try camera.geometry(for: view).motion == nil)

        // A frame analysed without motion: nothing moves now.
        camera.observer.metadataOutput(metadata, didOutput: [motion], from: connection)
        #expect(try camera.geometry(for: view).motion != nil)
        camera.observer.metadataOutput(metadata, didOutput: [], from: connection)
        #expect(try camera.geometry(for: view).motion == nil)
        #expect(!PreviewMessage.json(try camera.geometry(for: view)).contains("\"motion\""))

        // The motion's end, with no frame delivered after it.
        camera.observer.metadataOutput(metadata, didOutput: [motion], from: connection)
        let before = camera.observer.current.sequence
        camera.observer.metadataOutput(metadata, didEmit: [.motionEnded(motion)], from: connection)
        #expect(try camera.geometry(for: view).motion == nil)
        #expect(camera.observer.current.sequence > before, "the pages are told")
        #expect(camera.observer.recentEvents.last?.text == "motion ended")
    }

    /// `cvcam preview --motion` over its WebSocket, on the scene that is still and then moves:
    /// geometry without motion while still, then motion boxes over the moving picture (the
    /// union of the regions overlaps the picture's known rectangle at the motion's frame time),
    /// never at a time the scene was still, then none again after the picture has left.
    @Test func aSceneThatMovesGetsMotionBoxesOverTheSocketAndNoneWhileStill() throws {
        let (server, port) = try PreviewServerTests.startPreview(["--input", Self.spec, "--listen", "127.0.0.1:0"] + Self.motionOptions)
        defer { server.kill() }
        let page = try PreviewPointOfInterestTests.PageSocket(port: port, path: "/cameras/camera/ws")
        // A stretched view of the frame's own size: layer = device x (320, 240).
        try page.post(["type": "view", "width": 320, "height": 240, "gravity": "resize"])
        enum Phase { case waitingForStill, still, moving, done }
        var phase = Phase.waitingForStill
        var moving: [(time: Double, union: CGRect, iou: Double, covered: Double, count: Int)] = []
        var layerMismatches: [String] = []
        var nonNumeric: [String] = []
        var stillGeometries = 0
        var closed: String?
        var lastSent = Date()
        let deadline = Date(timeIntervalSinceNow: 180)
        while phase != .done, Date() < deadline {
            // The server closes a socket that sends nothing for its idle timeout (this client
            // does not answer pings as a browser does): say the view again now and then.
            if Date().timeIntervalSince(lastSent) > 20 {
                try page.post(["type": "view", "width": 320, "height": 240, "gravity": "resize"])
                lastSent = Date()
            }
            let message: [String: Any]
            do { message = try page.receive() } catch {
                closed = "\(error)"
                break
            }
            guard message["type"] as? String == "geometry" else { continue }
            guard let sent = message["motion"] as? [String: Any] else {
                switch phase {
                case .waitingForStill: phase = .still
                case .moving: phase = .done
                case .still, .done: break
                }
                stillGeometries += 1
                continue
            }
            if !Self.onlyNumbers(sent) { nonNumeric.append("\(sent)") }
            guard phase != .waitingForStill else { continue }  // connected mid-motion: wait for the next still spell
            phase = .moving
            let boxes = try #require(sent["regions"] as? [[String: Any]])
            let time = try #require(sent["time"] as? Double)
            var union = CGRect.null
            for box in boxes {
                let device = try #require(Self.rect(box["deviceBounds"]))
                let drawn = try #require(Self.rect(box["bounds"]))
                let expected = CGRect(x: device.minX * 320, y: device.minY * 240, width: device.width * 320, height: device.height * 240)
                if !PreviewEndToEnd.PreviewBrowserTests.within(drawn, expected, 1e-6) { layerMismatches.append("\(drawn) for \(device)") }
                union = union.union(device)
            }
            let truth = try Self.truth(at: time)
            let covered = truth.map { t -> Double in
                let i = t.intersection(union)
                return i.isNull ? 0 : Double(i.width * i.height / (t.width * t.height))
            } ?? 0
            moving.append((time, union, truth.map { Self.iou(union, $0) } ?? 0, covered, boxes.count))
        }
        let report = moving.map { String(format: "t=%.2f iou=%.2f covered=%.2f n=%d", $0.time, $0.iou, $0.covered, $0.count) }
            .joined(separator: "; ")
        #expect(
            phase == .done,
            "still → moving → still not seen within 180 s (\(phase), \(stillGeometries) still geometries\(closed.map { ", the socket ended: \($0)" } ?? "")): \(report)")
        #expect(moving.count >= 3, "\(report)")
        #expect(layerMismatches.isEmpty, "\(layerMismatches)")
        #expect(nonNumeric.isEmpty, "\(nonNumeric)")
        #expect(moving.allSatisfy { $0.count >= 1 && $0.count <= PreviewMessage.maximumMotionRegions })
        // None while still: every box comes from a frame in which the picture was in view (it
        // is in view from 1 s to 6 s of each 9 s; a spot it just left may stay motion for the
        // detector's settle time).
        for m in moving {
            let phaseInScene = m.time.truncatingRemainder(dividingBy: 9)
            #expect(phaseInScene >= 1 - 0.001 && phaseInScene <= 6 + 1.5, "a motion box at \(m.time) s, when the scene was still: \(report)")
        }
        // At the moving region: while the picture is wholly in view (2 s to 5 s), the regions'
        // union covers it and is not much more (the spots it just left may still count: the
        // detector's settle time).
        let inView = moving.filter { (2.0...5.0).contains($0.time.truncatingRemainder(dividingBy: 9)) }
        #expect(!inView.isEmpty, "\(report)")
        for m in inView {
            #expect(m.iou > 0.45 && m.covered > 0.8, "at \(m.time) s the boxes \(m.union) miss the picture: \(report)")
        }
    }

    /// A `cvcam serve` camera's page carries the same boxes (motion is on by default there): a
    /// geometry message with moving regions over the picture arrives on its WebSocket.
    @Test func aServeCamerasPageGetsMotionBoxes() throws {
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("serve.yaml")
        // No broker is needed for the page: the daemon keeps its messages while it retries.
        try """
            mqtt: {broker: mqtt://127.0.0.1:1}
            preview: {listen: 127.0.0.1:0}
            cameras:
              - name: door
                input: "\(Self.spec)"
                codes: [qr]
                motion: {endDelay: 0.5}
            """.write(to: file, atomically: true, encoding: .utf8)
        let daemon = try ServeProcess(config: file.path)
        defer { daemon.signal(SIGKILL) }
        let end = Date(timeIntervalSinceNow: 60)
        var port: Int?
        while port == nil, Date() < end, daemon.process.isRunning {
            port = daemon.stdout.firstMatch(of: /preview: http:\/\/127\.0\.0\.1:(\d+)\//).flatMap { Int($0.1) }
            if port == nil { Thread.sleep(forTimeInterval: 0.05) }
        }
        let open = try #require(port, "serve did not start its preview: \(daemon.stderr)")
        // The camera's page has a socket once its session runs (until then the upgrade is refused).
        var socket: PreviewPointOfInterestTests.PageSocket?
        while socket == nil, Date() < end.addingTimeInterval(60) {
            socket = try? PreviewPointOfInterestTests.PageSocket(port: open, path: "/cameras/door/ws")
            if socket == nil { Thread.sleep(forTimeInterval: 0.2) }
        }
        let page = try #require(socket, "the serve camera's WebSocket never opened: \(daemon.stderr)")
        try page.post(["type": "view", "width": 320, "height": 240, "gravity": "resize"])
        var found: (time: Double, union: CGRect)?
        let deadline = Date(timeIntervalSinceNow: 120)
        while found == nil, Date() < deadline {
            guard let message = try? page.receive() else { break }
            guard message["type"] as? String == "geometry", let sent = message["motion"] as? [String: Any],
                let time = sent["time"] as? Double, let regions = sent["regions"] as? [[String: Any]]
            else { continue }
            found = (time, regions.compactMap { Self.rect($0["deviceBounds"]) }.reduce(CGRect.null) { $0.union($1) })
        }
        let motion = try #require(found, "no motion box on the serve camera's page: \(daemon.stderr)")
        if let truth = try Self.truth(at: motion.time) {
            #expect(Self.iou(motion.union, truth) > 0.2, "at \(motion.time) s: boxes \(motion.union), picture \(truth)")
        }
    }
}

extension PreviewEndToEnd {
    /// The motion boxes on a `cvcam preview --motion` page in headless Chromium
    /// (`Tests/Browser/preview_motion.py`), turned 90° and mirrored: while the picture crosses,
    /// dashed boxes of their own colour lie within 2 px of `CaptureVideoPreviewLayer`'s
    /// conversion of the device boxes the server sent, over the picture; they are gone once it
    /// has left. Screenshot: `preview-motion.png` in `.build/artifacts/preview/`.
    @Suite(.serialized, .enabled(if: PreviewBrowserRun.available, "needs /usr/bin/chromium, /usr/bin/chromedriver and python3-selenium (Tools/setup installs them)"))
    struct PreviewMotionBrowserTests {
        struct Box: Decodable { var drawn: [Double], device: [Double] }
        struct Sample: Decodable { var time: Double, motion: [Box], style: [String]? }
        struct Run: Decodable {
            var errors: [String], samples: [Sample], stillBefore: Bool, clearedAfter: Bool
            var faceStyle: [String]?
        }

        @Test func motionBoxesAppearOnTheOverlayWhileTheSceneMoves() throws {
            let (server, port) = try PreviewServerTests.startPreview(
                ["--input", PreviewMotionTests.spec, "--listen", "127.0.0.1:0"] + PreviewMotionTests.motionOptions)
            defer { server.kill() }
            try FileManager.default.createDirectory(at: PreviewBrowserRun.artifacts, withIntermediateDirectories: true)
            let (width, height, gravity, rotation, mirrored) = (640.0, 480.0, "resizeAspect", 90.0, true)
            let config: [String: Any] = [
                "url": "http://127.0.0.1:\(port)/cameras/camera", "artifacts": PreviewBrowserRun.artifacts.path,
                "width": width, "height": height, "gravity": gravity, "rotation": rotation, "mirrored": mirrored,
            ]
            let json = String(decoding: try JSONSerialization.data(withJSONObject: config), as: UTF8.self)
            let script = CLI.packageRoot.appendingPathComponent("Tests/Browser/preview_motion.py")
            let result = try CLI.run([script.path, json], executable: URL(fileURLWithPath: "/usr/bin/python3"))
            let line = try #require(result.lines.last, "the browser script printed nothing: \(result.stderr)")
            let run = try JSONDecoder().decode(Run.self, from: Data(line.utf8))
            #expect(run.errors.isEmpty, "\(run.errors)")
            #expect(run.stillBefore, "no drawing without motion boxes while the scene was still")
            #expect(run.samples.count >= 4, "\(run.samples.count) samples with motion boxes")
            #expect(run.clearedAfter, "the motion boxes stayed after the picture left")

            let layer = try PreviewBrowserTests.layer(width, height, gravity, rotation, mirrored, frame: .init(width: 320, height: 240))
            for sample in run.samples {
                #expect(!sample.motion.isEmpty && sample.motion.count <= PreviewMessage.maximumMotionRegions)
                var union = CGRect.null
                for box in sample.motion {
                    let device = PreviewBrowserTests.rect(box.device)
                    union = union.union(device)
                    let expected = layer.layerRectConverted(fromMetadataOutputRect: device)
                    #expect(
                        PreviewBrowserTests.within(PreviewBrowserTests.rect(box.drawn), expected, 2),
                        "at \(sample.time) s a motion box is drawn at \(box.drawn), the library puts it at \(expected)")
                }
                // Over the picture: the boxes overlap where the scene drew it at that time (or
                // where it just left, for the detector's settle time).
                if let truth = try PreviewMotionTests.truth(at: sample.time) {
                    #expect(PreviewMotionTests.iou(union, truth) > 0.2, "at \(sample.time) s: boxes \(union), picture \(truth)")
                } else {
                    let phase = sample.time.truncatingRemainder(dividingBy: 9)
                    #expect(phase >= 6 && phase <= 7.5, "a motion box at \(sample.time) s, with nothing in view")
                }
            }
            // Visibly not a face box: another colour, dashed.
            let style = try #require(run.samples.first?.style)
            let face = try #require(run.faceStyle)
            #expect(style[0] != face[0], "motion stroke \(style), face stroke \(face)")
            #expect(style[1] != "none" && face[1] == "none", "motion dashes \(style[1]), face dashes \(face[1])")
        }
    }
}
