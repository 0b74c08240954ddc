import CaptureJobs
import CapturePreview
import Foundation

/// Home Assistant MQTT discovery messages for one `cvcam serve` camera.
///
/// A pure value builder: it knows the topic layout of `cvcam serve` (`P/N/faces`, `P/N/code`,
/// `P/N/snapshot`, `P/N/availability`, `P/availability`) and turns it into the retained config
/// messages Home Assistant reads on `<discovery>/<component>/<node_id>/<object_id>/config`:
///
/// | component | object_id | reads | entity | announced when the camera has |
/// |---|---|---|---|---|
/// | `binary_sensor` | `N_face` | `P/N/faces` | face present (`device_class: occupancy`, ON when `count > 0`) | `faces:` |
/// | `sensor` | `N_code` | `P/N/code` | the last code: its `state` (the text cut to 255 characters); the whole text and the symbology as attributes | `codes:` |
/// | `camera` | `N_snapshot` | `P/N/snapshot` | the latest snapshot's JPEG | `snapshots:` |
/// | `binary_sensor` | `N_motion` | `P/N/motion` | motion (`device_class: motion`, `ON`/`OFF`) | motion on (the default; not `motion: false`) |
///
/// Only the entities of what the camera does are announced (`components`): a face sensor of a
/// camera that does not look for faces would always be off, and a camera entity with no
/// snapshot to show makes Home Assistant answer 500. `withdrawalMessages()` clears the others,
/// in case an earlier configuration announced them.
///
/// Each entity is available only while both `P/availability` (the daemon, whose last will is
/// `offline`) and `P/N/availability` (the camera) say `online` (`availability_mode: all`), and all
/// of a camera's entities share one `device` block, so Home Assistant shows one device per camera.
///
/// The node ID is `cvcam_` and the topic prefix with every character outside `[a-zA-Z0-9_-]`
/// made `_`, so two daemons with different prefixes publish to different config topics and their
/// `unique_id`s differ.
///
/// Threading: a value type with no shared state; safe to use from any thread.
package struct HomeAssistantDiscovery: Sendable, Equatable {
    /// One MQTT message to publish: always retained, so Home Assistant finds the config after its
    /// own restart, and a removal (empty payload) clears the retained config from the broker.
    package struct Message: Sendable, Equatable {
        /// The config topic, `<discovery>/<component>/<node_id>/<object_id>/config`.
        package var topic: String
        /// The JSON config, or no bytes for a removal.
        package var payload: [UInt8]
        /// Always `true` for discovery messages.
        package var retain: Bool

        /// Creates the value from each of its properties.
        package init(topic: String, payload: [UInt8], retain: Bool) {
            self.topic = topic
            self.payload = payload
            self.retain = retain
        }
    }

    /// The Home Assistant components cvcam announces, in publishing order.
    package enum Component: Sendable, CaseIterable {
        case binarySensor
        case sensor
        case camera
        /// The motion `binary_sensor`.
        case motion

        /// Home Assistant's component (the config topic's second level).
        package var rawValue: String {
            switch self {
            case .binarySensor, .motion: "binary_sensor"
            case .sensor: "sensor"
            case .camera: "camera"
            }
        }

        /// The last part of the object ID and of the unique ID.
        package var entityKey: String {
            switch self {
            case .binarySensor: "face"
            case .sensor: "code"
            case .camera: "snapshot"
            case .motion: "motion"
            }
        }
    }

    /// The payloads `P/availability` and `P/N/availability` carry.
    package static let payloadAvailable = "online"
    package static let payloadNotAvailable = "offline"

    /// What a camera name must match (the serve config's rule; it is also a topic level).
    package static let cameraNamePattern = "[A-Za-z0-9_-]{1,64}"

    /// cvcam's topic prefix (`P`), e.g. `cvcam`.
    package let topicPrefix: String
    /// Home Assistant's discovery prefix, e.g. `homeassistant`.
    package let discoveryPrefix: String
    /// The camera's name in topics (`N`), `[A-Za-z0-9_-]{1,64}`.
    package let cameraName: String
    /// The device name Home Assistant shows; any text (it only ever appears inside JSON strings).
    package let displayName: String
    /// The device model: the input kind, e.g. "V4L2 camera", "network stream", "synthetic".
    package let model: String
    /// cvcam's version, as `cvcam --version` prints it.
    package let softwareVersion: String
    /// The entities announced, in publishing order: those of what the camera does.
    package let components: [Component]

    /// The most characters (Unicode scalars, as Python counts them) Home Assistant keeps in a
    /// state; a longer one is refused (`InvalidStateError`) and the entity shows `unknown`.
    package static let maximumStateLength = 255

    /// Checks the names that become topic levels; throws `CLIError.message` naming the bad one.
    ///
    /// - Parameters:
    ///   - displayName: defaults to `cameraName`.
    ///   - softwareVersion: defaults to the version `cvcam --version` prints.
    package init(
        topicPrefix: String, discoveryPrefix: String = "homeassistant", cameraName: String,
        displayName: String? = nil, model: String, softwareVersion: String = Self.cvcamVersion,
        components: [Component] = Component.allCases
    ) throws {
        try Self.checkTopicPrefix(topicPrefix, what: "topic prefix")
        try Self.checkTopicPrefix(discoveryPrefix, what: "Home Assistant discovery prefix")
        guard Self.isValidCameraName(cameraName) else {
            throw CLIError.message(
                "camera name '\(cameraName)' must be 1 to 64 letters, digits, '_' or '-' (it is an MQTT topic level)")
        }
        self.topicPrefix = topicPrefix
        self.discoveryPrefix = discoveryPrefix
        self.cameraName = cameraName
        self.displayName = displayName ?? cameraName
        self.model = model
        self.softwareVersion = softwareVersion
        self.components = Component.allCases.filter(components.contains)
    }

    /// The version `cvcam --version` prints, so Home Assistant shows the same.
    package static var cvcamVersion: String { CVCamVersion.string }

    /// Whether `name` matches `[A-Za-z0-9_-]{1,64}`.
    package static func isValidCameraName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy(isIDByte)
    }

    // MARK: Topics

    /// `P/availability`: the daemon's (retained, last will `offline`).
    package var daemonAvailabilityTopic: String { "\(topicPrefix)/availability" }
    /// `P/N/availability`: this camera's (retained).
    package var cameraAvailabilityTopic: String { "\(topicPrefix)/\(cameraName)/availability" }
    /// `P/N/faces`: `{"count":…,"faceIDs":[…],…}`, retained.
    package var facesTopic: String { "\(topicPrefix)/\(cameraName)/faces" }
    /// `P/N/code`: the last code `appear` event, retained.
    package var codeTopic: String { "\(topicPrefix)/\(cameraName)/code" }
    /// `P/N/snapshot`: the latest snapshot's JPEG bytes, retained.
    package var snapshotTopic: String { "\(topicPrefix)/\(cameraName)/snapshot" }
    /// `P/N/motion`: `ON` or `OFF`, retained.
    package var motionTopic: String { "\(topicPrefix)/\(cameraName)/motion" }

    /// `cvcam_` and the topic prefix reduced to `[a-zA-Z0-9_-]`.
    package var nodeID: String {
        "cvcam_" + String(decoding: topicPrefix.utf8.map { Self.isIDByte($0) ? $0 : UInt8(ascii: "_") }, as: UTF8.self)
    }

    /// `N_face`, `N_code`, `N_snapshot`: the camera name is already `[A-Za-z0-9_-]`.
    package func objectID(_ component: Component) -> String { "\(cameraName)_\(component.entityKey)" }

    /// `<discovery>/<component>/<node_id>/<object_id>/config`.
    package func configTopic(_ component: Component) -> String {
        "\(discoveryPrefix)/\(component.rawValue)/\(nodeID)/\(objectID(component))/config"
    }

    /// Unique across components, cameras and topic prefixes (it contains all three).
    package func uniqueID(_ component: Component) -> String { "\(nodeID)_\(objectID(component))" }

    // MARK: Messages

    /// The config messages of the announced `components`, retained, to publish when the camera is
    /// added (and again when the broker is reconnected: it may have lost its retained messages).
    package func configMessages() -> [Message] {
        components.map { Message(topic: configTopic($0), payload: payload($0), retain: true) }
    }

    /// Empty retained payloads on the config topics of the components not announced: an entity
    /// an earlier configuration of this camera announced is removed from Home Assistant.
    package func withdrawalMessages() -> [Message] {
        Component.allCases.filter { !components.contains($0) }.map { Message(topic: configTopic($0), payload: [], retain: true) }
    }

    /// Empty retained payloads on each config topic: Home Assistant removes the entities and the
    /// broker drops the retained configs, for a camera taken out of the serve config.
    package func removalMessages() -> [Message] {
        Component.allCases.map { Message(topic: configTopic($0), payload: [], retain: true) }
    }

    /// The JSON config of one component.
    package func payload(_ component: Component) -> [UInt8] {
        var config = EntityConfig(
            uniqueID: uniqueID(component), name: Self.entityName(component),
            availability: [daemonAvailabilityTopic, cameraAvailabilityTopic].map {
                .init(topic: $0, payloadAvailable: Self.payloadAvailable, payloadNotAvailable: Self.payloadNotAvailable)
            },
            availabilityMode: "all",
            device: .init(
                identifiers: [uniqueDeviceID], name: displayName, manufacturer: "cvcam", model: model,
                softwareVersion: softwareVersion),
            origin: .init(name: "cvcam", softwareVersion: softwareVersion))
        switch component {
        case .binarySensor:
            config.stateTopic = facesTopic
            config.deviceClass = "occupancy"
            // The faces payload is JSON; HA compares the template's result with payload_on/off.
            config.valueTemplate = "{{ 'ON' if value_json.count > 0 else 'OFF' }}"
            config.payloadOn = "ON"
            config.payloadOff = "OFF"
        case .sensor:
            config.stateTopic = codeTopic
            // `state` fits Home Assistant's 255 characters; the whole text is an attribute.
            config.valueTemplate = "{{ value_json.state }}"
            config.jsonAttributesTopic = codeTopic
            config.jsonAttributesTemplate =
                "{{ {'text': value_json.text, 'base64': value_json.base64, 'symbology': value_json.symbology, 'wallTime': value_json.wallTime} | tojson }}"
        case .camera:
            config.topic = snapshotTopic
        case .motion:
            // `ON`/`OFF` are binary_sensor's default payloads; given for clarity.
            config.stateTopic = motionTopic
            config.deviceClass = "motion"
            config.payloadOn = "ON"
            config.payloadOff = "OFF"
        }
        let encoder = JSONEncoder()
        // Sorted keys: the same camera always gives the same bytes, so a re-announce is a no-op.
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(config))
        } catch {
            // Only strings and arrays of them, which always encode; an empty payload instead
            // would silently be a removal.
            preconditionFailure("discovery config did not encode: \(error)")
        }
    }

    /// `text` as a Home Assistant state: whole when it fits in `limit` characters (Unicode
    /// scalars, as Python's `len` counts them), else cut after the last whole character
    /// (grapheme cluster: an accent or an emoji sequence is never split, and UTF-8 never is)
    /// that leaves room for a closing `…`.
    package static func stateText(_ text: String, limit: Int = maximumStateLength) -> String {
        guard text.unicodeScalars.count > limit else { return text }
        var kept = ""
        var scalars = 0
        for character in text {
            let count = character.unicodeScalars.count
            guard scalars + count <= limit - 1 else { break }
            kept.append(character)
            scalars += count
        }
        return kept + "…"
    }

    /// One device per camera: its identifier carries the node ID so two daemons do not merge.
    package var uniqueDeviceID: String { "\(nodeID)_\(cameraName)" }

    package static func entityName(_ component: Component) -> String {
        switch component {
        case .binarySensor: "Face present"
        case .sensor: "Last code"
        case .camera: "Snapshot"
        case .motion: "Motion"
        }
    }

    private static func isIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    /// A prefix is one or more topic levels: not empty, no wildcard, no NUL, no empty level.
    private static func checkTopicPrefix(_ prefix: String, what: String) throws {
        let levels = prefix.split(separator: "/", omittingEmptySubsequences: false)
        guard !prefix.isEmpty, !levels.contains(where: \.isEmpty),
            !prefix.contains(where: { $0 == "+" || $0 == "#" || $0 == "\0" })
        else {
            throw CLIError.message(
                "\(what) '\(prefix)' must be MQTT topic levels separated by '/', without '+', '#' or empty levels")
        }
    }

    /// The discovery JSON, with Home Assistant's documented (unabbreviated) keys.
    private struct EntityConfig: Encodable {
        package struct Availability: Encodable {
            package var topic: String
            package var payloadAvailable: String
            package var payloadNotAvailable: String
            package enum CodingKeys: String, CodingKey {
                case topic
                case payloadAvailable = "payload_available"
                case payloadNotAvailable = "payload_not_available"
            }

            /// Creates the value from each of its properties.
            package init(topic: String, payloadAvailable: String, payloadNotAvailable: String) {
                self.topic = topic
                self.payloadAvailable = payloadAvailable
                self.payloadNotAvailable = payloadNotAvailable
            }
        }
        package struct Device: Encodable {
            package var identifiers: [String]
            package var name: String
            package var manufacturer: String
            package var model: String
            package var softwareVersion: String
            package enum CodingKeys: String, CodingKey {
                case identifiers, name, manufacturer, model
                case softwareVersion = "sw_version"
            }

            /// Creates the value from each of its properties.
            package init(identifiers: [String], name: String, manufacturer: String, model: String, softwareVersion: String) {
                self.identifiers = identifiers
                self.name = name
                self.manufacturer = manufacturer
                self.model = model
                self.softwareVersion = softwareVersion
            }
        }
        /// Who sent the config, shown in Home Assistant's MQTT info.
        package struct Origin: Encodable {
            package var name: String
            package var softwareVersion: String
            package enum CodingKeys: String, CodingKey {
                case name
                case softwareVersion = "sw_version"
            }

            /// Creates the value from each of its properties.
            package init(name: String, softwareVersion: String) {
                self.name = name
                self.softwareVersion = softwareVersion
            }
        }

        package var uniqueID: String
        package var name: String
        package var availability: [Availability]
        package var availabilityMode: String
        package var device: Device
        package var origin: Origin
        package var stateTopic: String?
        package var valueTemplate: String?
        package var deviceClass: String?
        package var payloadOn: String?
        package var payloadOff: String?
        package var jsonAttributesTopic: String?
        package var jsonAttributesTemplate: String?
        /// The camera platform's image topic is `topic`, not `state_topic`.
        package var topic: String?

        package enum CodingKeys: String, CodingKey {
            case uniqueID = "unique_id"
            case name, availability, device, origin, topic
            case availabilityMode = "availability_mode"
            case stateTopic = "state_topic"
            case valueTemplate = "value_template"
            case deviceClass = "device_class"
            case payloadOn = "payload_on"
            case payloadOff = "payload_off"
            case jsonAttributesTopic = "json_attributes_topic"
            case jsonAttributesTemplate = "json_attributes_template"
        }
    }
}
