import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
import AppTestSupport

/// `cvcam serve --config`: the file's meaning, and problems named by line, camera and key.
@Suite struct ServeConfigTests {
    static let face = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/faces/images/grace_hopper.jpg").path

    static let good = """
        mqtt:
          broker: mqtts://broker.example:8883
          clientID: box-1
          username: cvcam
          passwordEnv: CVCAM_TEST_PASSWORD
          topicPrefix: site/cvcam
          keepAlive: 20
          queue: {maxMessages: 500, maxBytes: 8M, spool: /tmp/spool}
          homeAssistant: {discoveryPrefix: homeassistant}
        stats: 30
        metrics: {listen: "127.0.0.1:9464"}
        cameras:
          - name: door
            displayName: Front door
            input: /dev/video0
            size: 1280x720
            fps: 15
            rotate: 90
            mirror: true
            rectOfInterest: [0.1, 0.1, 0.8, 0.8]
            faces: {detection: realtime, updateInterval: 2}
            codes: [qr, datamatrix]
            snapshots: {dir: /tmp/snaps/door, minScore: 0.7, bestOf: 5, faceCooldown: 30, preFrames: 2}
            record: {dir: /tmp/video/door, segment: 300}
          - name: desk
            input: "synthetic:size=640x480,fps=10,image=\(face)"
            faces: {}
          - name: gate
            input: rtsp://camera.local/stream
            codes: {types: all, repeatInterval: 5}
        """

    @Test func aCompleteFileMeansWhatTheCommandLineWould() throws {
        let config = try ServeConfig.parse(Self.good, environment: ["CVCAM_TEST_PASSWORD": "s3cret"])
        #expect(config.mqtt.broker == "mqtts://broker.example:8883")
        #expect(config.mqtt.password == "s3cret")
        #expect(config.mqtt.topicPrefix == "site/cvcam")
        #expect(config.mqtt.maxQueuedMessages == 500)
        #expect(config.mqtt.maxQueuedBytes == 8 << 20)
        #expect(config.mqtt.spool == "/tmp/spool")
        #expect(config.mqtt.discoveryPrefix == "homeassistant")
        #expect(config.statsInterval == 30)
        #expect(config.metricsListen == "127.0.0.1:9464")
        #expect(config.cameras.map(\.name) == ["door", "desk", "gate"])
        let door = config.cameras[0]
        #expect(door.displayName == "Front door")
        let input = door.inputOptions
        #expect(input.device == "/dev/video0")
        #expect(input.size == "1280x720")
        #expect(input.rotate == .quarterTurn)
        #expect(input.mirror)
        #expect(input.regionOfInterest == CGRect(x: 0.1, y: 0.1, width: 0.8, height: 0.8))
        #expect(input.framePacing == .realTime)
        #expect(door.faceOptions?.faceDetection == .realtime)
        #expect(door.faces?.updateInterval == 2)
        #expect(door.codes?.types == .only([.qr, .dataMatrix]))
        let watch = try #require(door.snapshotOptions)
        #expect(watch.dir == "/tmp/snaps/door")
        #expect(watch.triggerConfiguration.minimumConfidence == 0.7)
        #expect(watch.triggerConfiguration.bestFrameWindow == 5)
        #expect(watch.triggerConfiguration.faceCooldown == 30)
        #expect(door.record == ServeConfig.Record(dir: "/tmp/video/door", segment: 300, quality: 80))
        #expect(config.cameras[1].inputOptions.input?.hasPrefix("synthetic:") == true)
        #expect(config.cameras[2].codes == ServeConfig.Codes(types: .all, repeatInterval: 5))
        #expect(config.cameras[2].faces == nil)
    }

    /// Every problem of the file is reported at once, each with its line, its camera and the key
    /// in the file's own words (never the command-line option's name).
    @Test func problemsNameTheLineTheCameraAndTheKey() throws {
        let bad = """
            mqtt:
              broker: mqtt://user:pw@broker:1883
              passwordEnv: CVCAM_NOT_SET_ANYWHERE
            cameras:
              - name: door
                input: /dev/video0
                faces: {}
                snapshots: {dir: /tmp/x, minScore: 1.5}
              - name: "bad name!"
                input: synthetic:size=64x48
                codes: [qr]
              - name: yard
                input: synthetic:size=64x48,colour=red
                faces: {detection: fastest}
                snapshots: {dir: /tmp/y, minFaceSise: 0.1}
              - name: door
                input: synthetic:size=64x48
                codes: [qr, notacode]
              - name: lobby
                input: synthetic:size=64x48
                snapshots: {dir: /tmp/z}
            """
        let error = try #require(throws: ServeConfigError.self) { try ServeConfig.parse(bad, file: "cams.yaml") }
        let text = error.description
        func has(_ path: String, _ fragment: String, line: Int? = nil) -> Bool {
            error.problems.contains { $0.path.contains(path) && ($0.path + " " + $0.message).contains(fragment) && (line == nil || $0.line == line) }
        }
        #expect(text.hasPrefix("cams.yaml: "))
        #expect(has("mqtt.broker", "credentials", line: 2))
        #expect(has("mqtt.passwordEnv", "CVCAM_NOT_SET_ANYWHERE"))
        #expect(has("cameras[0] (door)", "snapshots.minScore"))
        #expect(!text.contains("--min-score"))
        #expect(has("cameras[1] (bad name!): name", "letters, digits"))
        #expect(has("cameras[2] (yard)", "colour"))
        #expect(has("cameras[2] (yard)", "faces.detection"))
        #expect(has("cameras[2] (yard): snapshots.minFaceSise", "unknown key", line: 15))
        #expect(has("cameras[3] (door): codes", "notacode"))
        #expect(has("cameras", "'door' is used by more than one camera"))
        #expect(has("cameras[4] (lobby): snapshots", "faces"))
        #expect(error.problems.count >= 10)
    }

    @Test func missingSectionsAndBadValuesAreProblems() throws {
        for (yaml, path, fragment) in [
            ("cameras: []", "mqtt", "missing"),
            ("mqtt: {broker: mqtt://b}", "cameras", "missing"),
            ("mqtt: {broker: http://b}\ncameras: [{name: a, input: synthetic:size=8x8, codes: [qr]}]", "mqtt.broker", "mqtt://"),
            ("mqtt: {broker: mqtt://b, topicPrefix: a/#}\ncameras: [{name: a, input: synthetic:size=8x8, codes: [qr]}]", "mqtt.topicPrefix", "#"),
            ("mqtt: {broker: mqtt://b}\ncameras: [{name: a, input: synthetic:size=8x8}]", "cameras[0] (a)", "detects nothing"),
            ("mqtt: {broker: mqtt://b}\nmetrics: {listen: nowhere}\ncameras: [{name: a, input: synthetic:size=8x8, codes: [qr]}]", "metrics.listen", "HOST:PORT"),
            ("mqtt: {broker: mqtt://b}\ncameras: [{name: a, input: -, codes: [qr]}]", "cameras[0] (a): input", "standard input"),
            ("mqtt: {broker: mqtt://b, queue: {maxBytes: lots}}\ncameras: [{name: a, input: synthetic:size=8x8, codes: [qr]}]", "mqtt.queue.maxBytes", "size"),
            ("mqtt: {broker: mqtt://b}\ncameras: [{name: a, input: rtsp://h/s, size: 640x480, codes: [qr]}]", "cameras[0] (a)", "size"),
            ("mqtt: {broker: mqtt://b}\ncameras: [{name: a, input: synthetic:size=8x8, codes: [qr], record: {segment: 5}}]", "record.dir", "missing"),
            ("mqtt: [1, 2]\ncameras: [{name: a, input: synthetic:size=8x8, codes: [qr]}]", "mqtt", "mapping"),
            ("mqtt: {broker: mqtt://b\n", "", "YAML"),
        ] {
            let error = try #require(throws: ServeConfigError.self, "\(yaml)") { try ServeConfig.parse(yaml) }
            #expect(
                error.problems.contains { (path.isEmpty || $0.path.contains(path)) && ($0.path + $0.message).contains(fragment) },
                "\(yaml) → \(error.description)")
        }
    }

    @Test func aPasswordFileIsReadAndNeverShown() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("serve-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("pw")
        try "hunter2\n".write(to: file, atomically: true, encoding: .utf8)
        let config = try ServeConfig.parse(
            "mqtt: {broker: mqtt://b, username: u, passwordFile: \(file.path)}\ncameras: [{name: a, input: synthetic:size=8x8, codes: [qr]}]")
        #expect(config.mqtt.password == "hunter2")
        let unreadable = try #require(throws: ServeConfigError.self) {
            try ServeConfig.parse("mqtt: {broker: mqtt://b, username: u, passwordFile: \(dir.path)/none}\ncameras: [{name: a, input: synthetic:size=8x8, codes: [qr]}]")
        }
        #expect(unreadable.description.contains("mqtt.passwordFile"))
    }

    /// `preview:` takes `cvcam preview`'s server options; beyond loopback a token is required,
    /// from a file or the environment, and a bad token is described without being shown.
    @Test func thePreviewSectionIsPreviewsOptions() throws {
        let camera = "cameras: [{name: a, input: synthetic:size=8x8, codes: [qr]}]"
        #expect(try ServeConfig.parse("mqtt: {broker: mqtt://b}\n" + camera).preview == nil)
        let defaults = try #require(try ServeConfig.parse("mqtt: {broker: mqtt://b}\npreview: {}\n" + camera).preview)
        #expect(defaults.listen == ListenAddress.defaultValue && defaults.token == nil)
        #expect(defaults.stream == MJPEGFanOut.Settings(maximumSize: nil, quality: 70, framesPerSecond: 15))

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("serve-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let tokenFile = dir.appendingPathComponent("token")
        try "s3cret-token-1234\n".write(to: tokenFile, atomically: true, encoding: .utf8)
        let full = try #require(
            try ServeConfig.parse(
                "mqtt: {broker: mqtt://b}\npreview: {listen: \"0.0.0.0:8081\", tokenFile: \(tokenFile.path), streamSize: 640x360, streamQuality: 50, streamFps: 5}\n"
                    + camera
            ).preview)
        #expect(full.listen == ListenAddress(host: "0.0.0.0", port: 8081) && full.token == "s3cret-token-1234")
        #expect(full.stream == MJPEGFanOut.Settings(maximumSize: .init(width: 640, height: 360), quality: 50, framesPerSecond: 5))
        let fromEnv = try ServeConfig.parse(
            "mqtt: {broker: mqtt://b}\npreview: {listen: \"[::]:8081\", tokenEnv: PREVIEW_TOKEN}\n" + camera,
            environment: ["PREVIEW_TOKEN": "env-token-5678"])
        #expect(fromEnv.preview?.token == "env-token-5678")

        for (section, path, fragment) in [
            ("{listen: \"0.0.0.0:8080\"}", "preview.listen", "tokenFile or tokenEnv"),
            ("{listen: nowhere}", "preview.listen", "HOST:PORT"),
            ("{listen: \"0.0.0.0:8080\", tokenEnv: UNSET_VARIABLE}", "preview.tokenEnv", "not set"),
            ("{tokenEnv: SHORT}", "preview.tokenEnv", "8 to 256"),
            ("{tokenFile: \(dir.path)/none}", "preview.tokenFile", "cannot read"),
            ("{tokenFile: \(tokenFile.path), tokenEnv: PREVIEW_TOKEN}", "preview.tokenFile", "either"),
            ("{streamSize: big}", "preview.streamSize", "WIDTHxHEIGHT"),
            ("{streamQuality: 0}", "preview.streamQuality", "1…100"),
            ("{streamFps: 500}", "preview.streamFps", "120"),
            ("{port: 8080}", "preview.port", "unknown key"),
        ] {
            let yaml = "mqtt: {broker: mqtt://b}\npreview: \(section)\n" + camera
            let error = try #require(throws: ServeConfigError.self, "\(section)") {
                try ServeConfig.parse(yaml, environment: ["SHORT": "abc", "PREVIEW_TOKEN": "env-token-5678"])
            }
            #expect(error.problems.contains { $0.path == path && $0.message.contains(fragment) }, "\(section) → \(error.description)")
            #expect(!error.description.contains("abc") && !error.description.contains("env-token-5678"), "no token shown: \(error.description)")
        }
    }

    @Test func theKeyNamesOfTheFileAreTheOptionsCamelCased() {
        #expect(ConfigReader.kebab("minFaceSize") == "min-face-size")
        #expect(ConfigReader.kebab("every") == "every")
    }
}
