import Foundation
import Testing
import AppTestSupport

extension PreviewEndToEnd {
/// What `cvcam serve`'s preview tells a person, read in headless Chromium
/// (`Tests/Browser/preview_states.py`): the list with display names, states, the reason a
/// camera is not streaming and a thumbnail; a failing camera's page with its reason instead of
/// a broken image; a live camera's events at clock times. Screenshots: `preview-index.png`,
/// `preview-offline.png`, `preview-live.png` in `.build/artifacts/preview/`.
@Suite(.serialized, .enabled(if: PreviewBrowserRun.available, "needs /usr/bin/chromium, /usr/bin/chromedriver and python3-selenium (Tools/setup installs them)"))
struct PreviewStatusBrowserTests {
    struct Camera: Decodable {
        var name: String, state: String, displayName: String, stateText: String, reason: String
        var thumbnail: [Int]?
    }
    struct Offline: Decodable {
        var title: String, reason: String, status: String, videoVisible: Bool, displayName: String
    }
    struct Live: Decodable {
        var event: String, controls: String
    }
    struct Run: Decodable {
        var errors: [String]
        var index: [Camera]?
        var indexText: String?
        var offline: Offline?
        var offlineText: String?
        var live: Live?
    }

    static let script = CLI.packageRoot.appendingPathComponent("Tests/Browser/preview_states.py")

    @Test func thePagesSayWhatEachCameraIsDoing() throws {
        guard MosquittoTestBroker.missing == nil else { return }
        guard let stream = try NetworkStreamTestServer.start(.mjpeg, arguments: ["--fps", "10"]) else { return }
        defer { stream.stop() }
        let faces = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/faces/images").path
        guard let run = try ServePreviewTests.Running("""
            stats: 0
            preview: {listen: 127.0.0.1:0, streamFps: 10}
            cameras:
              - name: door
                displayName: Front door
                input: "synthetic:size=640x480,fps=10,background=\(faces)/astronaut.png"
                faces: {}
              - name: gate
                displayName: Back gate
                input: "\(PreviewStatusTests.failing)"
                codes: [qr]
              - name: street
                displayName: Street
                input: "\(stream.url())"
                codes: [qr]
            """)
        else { return }
        defer { run.stop() }
        let base = "http://127.0.0.1:\(run.port)"
        try FileManager.default.createDirectory(at: PreviewBrowserRun.artifacts, withIntermediateDirectories: true)
        let config: [String: String] = [
            "index": base + "/", "offline": base + "/cameras/gate", "live": base + "/cameras/street",
            "artifacts": PreviewBrowserRun.artifacts.path,
        ]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: config), as: UTF8.self)
        let result = try CLI.run([Self.script.path, json], executable: URL(fileURLWithPath: "/usr/bin/python3"))
        let line = try #require(result.lines.last, "the browser script printed nothing: \(result.stderr)")
        let seen = try JSONDecoder().decode(Run.self, from: Data(line.utf8))
        #expect(seen.errors.isEmpty, "\(seen.errors)\n\(run.daemon.stderr)")

        let index = try #require(seen.index)
        #expect(index.map(\.name) == ["door", "gate", "street"])
        #expect(index.map(\.displayName) == ["Front door", "Back gate", "Street"])
        let door = try #require(index.first { $0.name == "door" })
        #expect(door.state == "live" && door.stateText == "Streaming")
        let thumbnail = try #require(door.thumbnail, "no thumbnail for the running camera")
        #expect(thumbnail[0] > 0 && thumbnail[0] <= 320 && thumbnail[1] <= 240, "\(thumbnail)")
        let gate = try #require(index.first { $0.name == "gate" })
        #expect(gate.state == "offline" && gate.stateText == "Not streaming" && gate.thumbnail == nil)
        #expect(gate.reason.contains("127.0.0.1:1"), "\(gate.reason)")

        let offline = try #require(seen.offline)
        #expect(offline.title == "Not streaming" && offline.status == "not streaming")
        #expect(offline.reason.contains("127.0.0.1:1") && offline.reason.contains("trying again"), "\(offline.reason)")
        #expect(!offline.videoVisible, "a broken image is shown")
        #expect(offline.displayName == "Back gate")

        // No password anywhere a person can read.
        for text in [seen.indexText ?? "", seen.offlineText ?? "", offline.reason, gate.reason] {
            #expect(!text.contains(PreviewStatusTests.password))
        }

        let live = try #require(seen.live)
        // The time of day (e.g. "4:31:07 PM" or "16:31:07"), not "12.34 s".
        #expect(live.event.firstMatch(of: /^\d{1,2}:\d{2}:\d{2}/) != nil, "\(live.event)")
        // The newest line of the event log: the photo, or a motion line the scene made since.
        #expect(live.event.contains("photo") || live.event.contains("motion"), "\(live.event)")
        #expect(live.controls.contains("Fit: whole picture") && !live.controls.contains("Gravity"), "\(live.controls)")

        for name in ["preview-index.png", "preview-offline.png", "preview-live.png"] {
            let path = PreviewBrowserRun.artifacts.appendingPathComponent(name).path
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            #expect(size > 10_000, "\(path)")
        }
    }
}
}
