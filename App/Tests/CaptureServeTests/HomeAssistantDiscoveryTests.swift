import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
import AppTestSupport

/// Home Assistant MQTT discovery for `cvcam serve`: the configs are checked against the field
/// names Home Assistant documents for MQTT discovery and the `mqtt` binary_sensor, sensor and
/// camera platforms (the camera's image topic is `topic`; the others read `state_topic`).
@Suite struct HomeAssistantDiscoveryTests {
    static func discovery(
        prefix: String = "cvcam", camera: String = "door", display: String? = nil, model: String = "V4L2 camera"
    ) throws -> HomeAssistantDiscovery {
        try HomeAssistantDiscovery(
            topicPrefix: prefix, discoveryPrefix: "homeassistant", cameraName: camera, displayName: display,
            model: model)
    }

    static func json(_ message: HomeAssistantDiscovery.Message) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(message.payload))
        return try #require(object as? [String: Any], "payload of \(message.topic) is not a JSON object")
    }

    /// The component is the topic's second level: `<discovery>/<component>/<node_id>/<object_id>/config`.
    static func component(of topic: String) -> String {
        String(topic.split(separator: "/", omittingEmptySubsequences: false)[1])
    }

    @Test func everyConfigIsAJSONObjectWithItsPlatformsRequiredKeys() throws {
        let messages = try Self.discovery().configMessages()
        #expect(messages.map { Self.component(of: $0.topic) } == ["binary_sensor", "sensor", "camera", "binary_sensor"])
        for message in messages {
            #expect(message.retain)
            let config = try Self.json(message)
            for key in ["unique_id", "name", "availability", "availability_mode", "device"] {
                #expect(config[key] != nil, "\(message.topic) lacks \(key)")
            }
            switch Self.component(of: message.topic) {
            case "binary_sensor" where message.topic.hasSuffix("door_motion/config"):
                #expect(config["state_topic"] as? String == "cvcam/door/motion")
                #expect(config["device_class"] as? String == "motion")
                #expect(config["payload_on"] as? String == "ON" && config["payload_off"] as? String == "OFF")
                #expect(config["value_template"] == nil, "the motion topic carries ON/OFF itself")
            case "binary_sensor":
                #expect(config["state_topic"] as? String == "cvcam/door/faces")
                #expect(config["device_class"] as? String == "occupancy")
                let template = try #require(config["value_template"] as? String)
                #expect(template.contains("value_json.count > 0"))
                #expect(template.contains("'ON'") && template.contains("'OFF'"))
                #expect(config["payload_on"] as? String == "ON")
                #expect(config["payload_off"] as? String == "OFF")
                #expect(config["topic"] == nil)
            case "sensor":
                #expect(config["state_topic"] as? String == "cvcam/door/code")
                // The state fits Home Assistant's 255 characters; the whole text is an attribute.
                #expect(config["value_template"] as? String == "{{ value_json.state }}")
                #expect(config["json_attributes_topic"] as? String == "cvcam/door/code")
                let attributes = try #require(config["json_attributes_template"] as? String)
                #expect(attributes.contains("'text': value_json.text") && attributes.contains("tojson"))
                #expect(config["topic"] == nil)
            case "camera":
                #expect(config["topic"] as? String == "cvcam/door/snapshot")
                #expect(config["state_topic"] == nil, "the camera platform reads `topic`")
            default:
                Issue.record("unexpected component in \(message.topic)")
            }
        }
    }

    @Test func theDeviceBlockIsSharedAndNamesCvcamAndItsVersion() throws {
        let messages = try Self.discovery(model: "synthetic").configMessages()
        let devices = try messages.map { try #require(Self.json($0)["device"] as? [String: Any]) }
        for device in devices {
            #expect(device["identifiers"] as? [String] == ["cvcam_cvcam_door"])
            #expect(device["name"] as? String == "door")
            #expect(device["manufacturer"] as? String == "cvcam")
            #expect(device["model"] as? String == "synthetic")
            #expect(device["sw_version"] as? String == CVCamVersion.string)
        }
        #expect(!CVCamVersion.string.isEmpty)
    }

    @Test func topicsFollowTheDiscoveryPatternWithRestrictedIDs() throws {
        // A prefix with levels and a character outside the ID class still gives a valid node ID.
        let discovery = try Self.discovery(prefix: "site/cvcam.2", camera: "Gate_2-b")
        let id = try Regex("^[a-zA-Z0-9_-]+$")
        for message in discovery.configMessages() + discovery.removalMessages() {
            let levels = message.topic.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            #expect(levels.count == 5, "\(message.topic)")
            #expect(levels[0] == "homeassistant")
            #expect(["binary_sensor", "sensor", "camera"].contains(levels[1]))
            #expect(levels[2].wholeMatch(of: id) != nil, "node_id \(levels[2])")
            #expect(levels[3].wholeMatch(of: id) != nil, "object_id \(levels[3])")
            #expect(levels[4] == "config")
        }
        #expect(discovery.nodeID == "cvcam_site_cvcam_2")
        #expect(discovery.configTopic(.camera) == "homeassistant/camera/cvcam_site_cvcam_2/Gate_2-b_snapshot/config")
        // State topics keep the prefix as it is: they are cvcam's own topics.
        #expect(discovery.snapshotTopic == "site/cvcam.2/Gate_2-b/snapshot")
    }

    @Test func uniqueIDsAreUniqueAcrossComponentsCamerasAndPrefixes() throws {
        let all = try [
            Self.discovery(camera: "door"), Self.discovery(camera: "gate"), Self.discovery(camera: "door_face"),
            Self.discovery(prefix: "other", camera: "door"),
        ]
        let ids = try all.flatMap { try $0.configMessages().map { try #require(Self.json($0)["unique_id"] as? String) } }
        #expect(ids.count == 16)
        #expect(Set(ids).count == ids.count, "\(ids)")
        let topics = all.flatMap { $0.configMessages().map(\.topic) }
        #expect(Set(topics).count == topics.count)
    }

    @Test func availabilityNeedsTheDaemonAndTheCameraOnline() throws {
        for message in try Self.discovery(prefix: "home/cams", camera: "hall").configMessages() {
            let config = try Self.json(message)
            #expect(config["availability_mode"] as? String == "all")
            let entries = try #require(config["availability"] as? [[String: Any]])
            #expect(entries.map { $0["topic"] as? String } == ["home/cams/availability", "home/cams/hall/availability"])
            for entry in entries {
                #expect(entry["payload_available"] as? String == "online")
                #expect(entry["payload_not_available"] as? String == "offline")
            }
        }
    }

    @Test func aHostileDisplayNameIsCarriedAsJSONText() throws {
        let hostile = "Door \"cam\"\\ \n\u{1B}[2J}{<script>\u{202E}/+/#\u{0}"
        let messages = try Self.discovery(display: hostile).configMessages()
        for message in messages {
            let device = try #require(Self.json(message)["device"] as? [String: Any])
            #expect(device["name"] as? String == hostile)
            // The raw bytes hold no unescaped quote, newline, ESC or NUL from the name.
            let text = String(decoding: message.payload, as: UTF8.self)
            #expect(!text.contains("\n") && !text.contains("\u{1B}") && !text.contains("\u{0}"))
            #expect(text.contains(#"Door \"cam\"\\"#))
            // Topics never carry the display name.
            #expect(!message.topic.contains("Door"))
        }
    }

    @Test func aCameraWithoutMotionDetectionHasNoMotionEntityAndClearsAnOldOne() throws {
        let discovery = try HomeAssistantDiscovery(
            topicPrefix: "cvcam", cameraName: "door", model: "m", components: [.binarySensor, .sensor, .camera])
        let motionTopic = "homeassistant/binary_sensor/cvcam_cvcam/door_motion/config"
        #expect(!discovery.configMessages().contains { $0.topic == motionTopic })
        let withdrawn = try #require(discovery.withdrawalMessages().first { $0.topic == motionTopic })
        #expect(withdrawn.payload.isEmpty && withdrawn.retain)
        // serve announces it unless the camera says `motion: false`.
        let config = try ServeConfig.parse("""
            mqtt: {broker: mqtt://127.0.0.1}
            cameras:
              - {name: a, input: "synthetic:size=64x48", codes: [qr], motion: false}
            """)
        #expect(ServeDaemon.components(of: config.cameras[0]) == [.sensor])
    }

    @Test func removalMessagesAreEmptyRetainedPayloadsOnEachConfigTopic() throws {
        let discovery = try Self.discovery(camera: "old-cam")
        let removals = discovery.removalMessages()
        #expect(removals.map(\.topic) == discovery.configMessages().map(\.topic))
        for removal in removals {
            #expect(removal.payload.isEmpty)
            #expect(removal.retain)
        }
    }

    /// Only the entities of what the camera does; the others are withdrawn (empty retained
    /// configs), so an entity an earlier configuration announced leaves Home Assistant.
    @Test func onlyTheEntitiesOfWhatTheCameraDoesAreAnnounced() throws {
        let codes = try HomeAssistantDiscovery(
            topicPrefix: "cvcam", cameraName: "gate", model: "network camera", components: [.sensor])
        #expect(codes.configMessages().map { Self.component(of: $0.topic) } == ["sensor"])
        let withdrawn = codes.withdrawalMessages()
        #expect(withdrawn.map { Self.component(of: $0.topic) } == ["binary_sensor", "camera", "binary_sensor"])
        #expect(withdrawn.allSatisfy { $0.payload.isEmpty && $0.retain })
        // Removal still empties all four.
        #expect(codes.removalMessages().count == 4)
        // The order of publishing is fixed, whatever order the components were given in.
        let both = try HomeAssistantDiscovery(topicPrefix: "cvcam", cameraName: "gate", model: "m", components: [.camera, .binarySensor])
        #expect(both.configMessages().map { Self.component(of: $0.topic) } == ["binary_sensor", "camera"])
        // The daemon's choice, from the camera's configuration.
        let config = try ServeConfig.parse("""
            mqtt: {broker: mqtt://127.0.0.1}
            cameras:
              - {name: a, input: "synthetic:size=64x48", codes: [qr]}
              - {name: b, input: "synthetic:size=64x48", faces: {}, snapshots: {dir: /tmp/b}}
            """)
        // Motion is on by default in serve.
        #expect(ServeDaemon.components(of: config.cameras[0]) == [.sensor, .motion])
        #expect(ServeDaemon.components(of: config.cameras[1]) == [.binarySensor, .camera, .motion])
    }

    /// A Home Assistant state holds 255 characters (Python's `len`: Unicode scalars). Longer
    /// text is cut after the last whole character that leaves room for `…`: never inside a
    /// UTF-8 sequence, a combining sequence or an emoji sequence.
    @Test func statesAreCutToHomeAssistantsLengthAtWholeCharacters() throws {
        let fits = String(repeating: "x", count: 255)
        #expect(HomeAssistantDiscovery.stateText(fits) == fits)
        #expect(HomeAssistantDiscovery.stateText("") == "")
        let long = String(repeating: "x", count: 300)
        #expect(HomeAssistantDiscovery.stateText(long) == String(repeating: "x", count: 254) + "…")
        // 2-scalar characters (e + combining acute): 127 of them and the ellipsis.
        let accents = String(repeating: "e\u{301}", count: 200)
        let cutAccents = HomeAssistantDiscovery.stateText(accents)
        #expect(cutAccents == String(repeating: "e\u{301}", count: 127) + "…")
        // A family emoji is 7 scalars; 36 of them are 252, and a 37th would pass 254.
        let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466}"
        let cutFamilies = HomeAssistantDiscovery.stateText(String(repeating: family, count: 40))
        #expect(cutFamilies == String(repeating: family, count: 36) + "…")
        // Multi-byte UTF-8 (3 bytes each) counts as one character each, as Home Assistant counts.
        let kana = String(repeating: "\u{30AB}", count: 256)
        let cutKana = HomeAssistantDiscovery.stateText(kana)
        #expect(cutKana == String(repeating: "\u{30AB}", count: 254) + "…")
        for cut in [cutAccents, cutFamilies, cutKana] {
            #expect(cut.unicodeScalars.count <= 255)
            #expect(String(decoding: Array(cut.utf8), as: UTF8.self) == cut)
        }
    }

    /// The retained `code` message: the `appear` event as published, plus `state`.
    @Test func theRetainedCodeCarriesItsStateBesideTheWholeText() throws {
        let text = String(repeating: "Z", count: 400)
        let event = CodeEvent(
            event: "appear", time: 1.5, symbology: "qr", text: text, base64: Data(text.utf8).base64EncodedString(),
            box: .init(CGRect(x: 0.1, y: 0.1, width: 0.2, height: 0.2)), corners: [])
        let line = EventPrinter.encode(event, wallTime: "2024-03-01T10:00:00.000+01:00")
        let retained = CodeState.line(event, eventLine: line)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(retained.utf8)) as? [String: Any])
        #expect(json["text"] as? String == text)
        #expect((json["state"] as? String)?.unicodeScalars.count == 255)
        #expect(json["wallTime"] as? String == "2024-03-01T10:00:00.000+01:00")
        #expect(json["schema"] as? Int == 1 && json["type"] as? String == "code")
        // A payload that is not text: its base64 is the state.
        let binary = CodeEvent(event: "appear", time: 0, symbology: "qr", text: nil, base64: "AAEC", box: .init(.zero), corners: [])
        #expect(CodeState(binary).state == "AAEC")
    }

    @Test func badNamesAreRejectedBeforeTheyBecomeTopicLevels() throws {
        for camera in ["", "a/b", "cam+", "cam#", "caméra", "with space", String(repeating: "x", count: 65)] {
            #expect(throws: CLIError.self, "camera \(camera)") { try Self.discovery(camera: camera) }
        }
        #expect(throws: Never.self) { try Self.discovery(camera: String(repeating: "x", count: 64)) }
        for prefix in ["", "a//b", "/a", "a/", "a/+", "#"] {
            #expect(throws: CLIError.self, "prefix \(prefix)") { try Self.discovery(prefix: prefix) }
        }
        #expect(throws: CLIError.self) {
            try HomeAssistantDiscovery(topicPrefix: "cvcam", discoveryPrefix: "home+", cameraName: "a", model: "m")
        }
    }
}
