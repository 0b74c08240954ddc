import Foundation
import Testing

@testable import CaptureJobs
import AppTestSupport

/// `cvcam serve`'s dashboard in a real browser (headless Chromium, `Tests/Browser/dashboard_browser.py`):
/// a face's snapshot and clip appear under its camera, their pictures load, and the clip plays.
@Suite(.serialized, .enabled(if: PreviewBrowserRun.available, "needs /usr/bin/chromium, /usr/bin/chromedriver and python3-selenium (Tools/setup installs them)"))
struct DashboardBrowserTests {
    @Test func aFacesSnapshotAndClipShowAndTheClipPlays() throws {
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let face = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/faces/images/astronaut.png").path
        // No broker is needed for the page: the daemon keeps its messages while it retries.
        let file = dir.appendingPathComponent("serve.yaml")
        try """
            mqtt: {broker: mqtt://127.0.0.1:1}
            preview: {listen: 127.0.0.1:0}
            cameras:
              - name: door
                displayName: Front door
                input: "synthetic:size=640x480,fps=10,image=\(face),speed=160"
                faces: {}
                snapshots: {dir: \(dir.path)/snaps}
                clips: {dir: \(dir.path)/clips, preRoll: 1, postRoll: 1}
            """.write(to: file, atomically: true, encoding: .utf8)
        let daemon = try ServeProcess(config: file.path)
        defer { daemon.signal(SIGKILL) }
        let end = Date(timeIntervalSinceNow: 60)
        var port: Int?
        while port == nil, Date() < end, daemon.process.isRunning {
            port = daemon.stdout.firstMatch(of: /preview: http:\/\/127\.0\.0\.1:(\d+)\//).flatMap { Int($0.1) }
            if port == nil { Thread.sleep(forTimeInterval: 0.05) }
        }
        let url = "http://127.0.0.1:\(try #require(port, "serve did not start its preview: \(daemon.stderr)"))/"
        try FileManager.default.createDirectory(at: PreviewBrowserRun.artifacts, withIntermediateDirectories: true)
        let script = CLI.packageRoot.appendingPathComponent("Tests/Browser/dashboard_browser.py")
        let result = try CLI.run(
            [script.path, url, "door", PreviewBrowserRun.artifacts.appendingPathComponent("dashboard.png").path],
            executable: URL(fileURLWithPath: "/usr/bin/python3"))
        #expect(result.status == 0, "\(result.stderr)")
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        #expect(seen["displayName"] as? String == "Front door")
        #expect(seen["clips"] as? Int == 1 && seen["snapshots"] as? Int == 1, "\(seen)")
        #expect((seen["posterWidth"] as? Int ?? 0) == 640 && (seen["snapshotWidth"] as? Int ?? 0) == 640, "\(seen)")
        #expect((seen["download"] as? String)?.hasSuffix("-clip.avi") == true)
        #expect((seen["playing"] as? String)?.contains("/play.mjpeg") == true && (seen["playingWidth"] as? Int ?? 0) == 640, "\(seen)")
    }
}
