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
        #expect(messages.map { Self.component(of: $0.topic) } == ["binary_sensor", "sensor", "camera"])
        for message in messages {
            #expect(message.retain)
            let config = try Self.json(message)
            for key in ["unique_id", "name", "availability", "availability_mode", "device"] {
                #expect(config[key] != nil, "\(message.topic) lacks \(key)")
            }
            switch Self.component(of: message.topic) {
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
                #expect(config["value_template"] as? String == "{{ value_json.text }}")
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
        #expect(ids.count == 12)
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

    @Test func removalMessagesAreEmptyRetainedPayloadsOnEachConfigTopic() throws {
        let discovery = try Self.discovery(camera: "old-cam")
        let removals = discovery.removalMessages()
        #expect(removals.map(\.topic) == discovery.configMessages().map(\.topic))
        for removal in removals {
            #expect(removal.payload.isEmpty)
            #expect(removal.retain)
        }
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
