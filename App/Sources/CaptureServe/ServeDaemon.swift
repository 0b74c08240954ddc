import CaptureJobs
import CaptureKit
import CapturePreview
import Foundation
import Logging

/// The broker as the daemon uses it: publishing (`ServePublisher`), commands in, and the
/// connection's life. `MQTTLink` is the real one (libmosquitto through CaptureMQTT).
///
/// Threading: thread-safe.
package protocol ServeBrokerLink: ServePublisher {
    func start()
    /// `handler` gets (topic, payload) of every message matching `filter`, also after a reconnect.
    func subscribe(_ filter: String, handler: @escaping @Sendable (String, [UInt8]) -> Void)
    /// Runs on every (re)connect; what it publishes goes out before the backlog.
    func onConnect(_ handler: @escaping @Sendable () -> Void)
    /// Waits until everything queued is acknowledged; false on timeout.
    func flush(timeout: Double) -> Bool
    /// Disconnects cleanly (no last will).
    func stop()
}

/// `cvcam serve`'s cameras and what they share: the broker link, the daemon's availability,
/// Home Assistant discovery, commands, and reloading the configuration.
///
/// Threading: `start`, `reload` and `shutdown` may be called from any thread (they are
/// serialised by `lock`); commands arrive on the link's thread.
package final class ServeDaemon: @unchecked Sendable {
    // @unchecked: `config` and `cameras` are guarded by `lock`.
    private let lock = NSLock()
    private var config: ServeConfig
    private var cameras: [String: ServeCamera] = [:]
    /// Set by the first connection: until then, `connected()` will announce every camera.
    private var hasConnected = false
    private let configPath: String?
    private let link: any ServeBrokerLink
    private let metrics: ServeMetrics?
    private let preview: ServePreview?
    private let logger = Logger(label: "cvcam.serve")
    /// Keeps the cameras' files within the retention limits, when any are set.
    private var retention: RetentionKeeper?
    /// Seconds a shutdown waits for the broker to take the last messages.
    package static let flushTimeout = 5.0

    package init(
        config: ServeConfig, configPath: String?, link: any ServeBrokerLink, metrics: ServeMetrics? = nil,
        preview: PreviewDirectory? = nil, library: PreviewLibrary? = nil
    ) {
        self.config = config
        self.configPath = configPath
        self.link = link
        self.metrics = metrics
        self.preview = preview.map {
            ServePreview(directory: $0, stream: config.preview?.stream ?? ServeConfig.Preview().stream, library: library)
        }
        // Listed before the preview is announced: a page asked for at once lists every
        // configured camera, not an empty directory until `start`.
        preview?.list(config.cameras.map(\.name), displayNames: Self.displayNames(config.cameras))
    }

    package var prefix: String { lock.withLock { config.mqtt.topicPrefix } }
    package var daemonAvailability: String { CameraTopics.daemonAvailability(prefix: prefix) }

    /// The preview's cameras, when the daemon serves them.
    package var previewDirectory: PreviewDirectory? { preview?.directory }

    /// The camera named `name`, while it runs (tests).
    package func camera(_ name: String) -> ServeCamera? { lock.withLock { cameras[name] } }

    /// Connects, subscribes to the cameras' `set` topics and starts every camera. The cameras'
    /// retained state and Home Assistant configs go out once, when the broker connection is made.
    package func start() {
        let prefix = self.prefix
        link.onConnect { [weak self] in self?.connected() }
        link.subscribe("\(prefix)/+/set") { [weak self] topic, payload in self?.command(topic: topic, payload: payload) }
        let made = lock.withLock {
            preview?.directory.list(config.cameras.map(\.name), displayNames: Self.displayNames(config.cameras))
            keepFiles(config)
            preview?.library?.set(config.previewShelves)
            return config.cameras.map { makeCamera($0, announce: false) }
        }
        link.start()
        for camera in made { startCamera(camera) }
    }

    /// Starts retention, or gives it the reloaded cameras' folders and limits. Call with `lock` held.
    private func keepFiles(_ config: ServeConfig) {
        let policy = config.retentionPolicy
        if let retention, retention.interval == config.retention.interval {
            retention.update(policy)
            return
        }
        retention?.stop()
        retention = nil
        guard policy.hasLimits else { return }
        let keeper = RetentionKeeper(
            policy: policy, interval: config.retention.interval,
            reporter: ServeRetentionReporter(publisher: link, prefix: config.mqtt.topicPrefix, metrics: metrics))
        keeper.start()
        retention = keeper
    }

    /// The retention keeper, while limits are set (tests).
    package var retentionKeeper: RetentionKeeper? { lock.withLock { retention } }

    /// On every (re)connect: the daemon is online, each camera's state and discovery again
    /// (a broker that restarted without persistence lost its retained messages).
    private func connected() {
        let (list, config) = lock.withLock {
            hasConnected = true
            return (Array(cameras.values), self.config)
        }
        link.publish(topic: daemonAvailability, text: CameraTopics.online, retain: true, latestOnly: true)
        for camera in list.sorted(by: { $0.config.name < $1.config.name }) {
            camera.republishState()
            publishDiscovery(camera.config, config: config)
        }
    }

    /// The Home Assistant entities of what `camera` does (`HomeAssistantDiscovery`).
    package static func components(of camera: ServeConfig.Camera) -> [HomeAssistantDiscovery.Component] {
        var components: [HomeAssistantDiscovery.Component] = []
        if camera.faces != nil { components.append(.binarySensor) }
        if camera.codes != nil { components.append(.sensor) }
        // Snapshots, the rules' and the `snapshot` command's alike, need the snapshots folder.
        if camera.snapshotArguments != nil { components.append(.camera) }
        if camera.motionArguments != nil { components.append(.motion) }
        return components
    }

    private func publishDiscovery(_ camera: ServeConfig.Camera, config: ServeConfig, removing: Bool = false) {
        guard let discovery = config.mqtt.discoveryPrefix else { return }
        // The names were checked when the file was read; a failure here is a bug, said once.
        guard
            let entities = try? HomeAssistantDiscovery(
                topicPrefix: config.mqtt.topicPrefix, discoveryPrefix: discovery, cameraName: camera.name,
                displayName: camera.displayName, model: Self.model(of: camera), components: Self.components(of: camera))
        else {
            logger.error("no Home Assistant discovery for \(camera.name): its names are not valid topic levels")
            return
        }
        let messages = removing ? entities.removalMessages() : entities.configMessages() + entities.withdrawalMessages()
        for message in messages {
            link.publish(topic: message.topic, payload: message.payload, retain: true, latestOnly: true)
        }
    }

    /// Empties the retained topics `old` kept that `new` no longer feeds (every one, the camera's
    /// availability included, for a camera taken out: `new` nil), so the broker stops handing
    /// stale state to new subscribers.
    private func clearRetained(_ old: ServeConfig.Camera, becoming new: ServeConfig.Camera?, prefix: String) {
        let topics = CameraTopics(prefix: prefix, camera: old.name)
        var stale: [String] = []
        if new == nil { stale.append(topics.availability) }
        if old.faces != nil, new?.faces == nil { stale.append(topics.faces) }
        if old.codes != nil, new?.codes == nil { stale.append(topics.code) }
        if old.snapshotArguments != nil, new?.snapshotArguments == nil { stale.append(topics.snapshot) }
        for topic in stale { link.publish(topic: topic, payload: [], retain: true, latestOnly: true) }
    }

    /// The names the preview shows, by camera name.
    private static func displayNames(_ cameras: [ServeConfig.Camera]) -> [String: String] {
        Dictionary(cameras.map { ($0.name, $0.displayName) }, uniquingKeysWith: { a, _ in a })
    }

    /// The device model Home Assistant shows: what kind of input the camera is.
    package static func model(of camera: ServeConfig.Camera) -> String {
        switch camera.inputOptions.inputKind {
        case "camera": "V4L2 camera"
        case "stream": "network camera"
        case "synthetic": "synthetic camera"
        case "folder", "image": "image folder"
        default: "video file"
        }
    }

    /// Makes the camera and lists it; with `announce`, publishes its state and discovery now,
    /// unless the first connection is still to come (`connected()` will). Call with `lock` held.
    private func makeCamera(_ camera: ServeConfig.Camera, announce: Bool) -> ServeCamera {
        let made = ServeCamera(
            config: camera, prefix: config.mqtt.topicPrefix, publisher: link, statsInterval: config.statsInterval,
            metrics: metrics?.camera(camera.name), preview: preview)
        cameras[camera.name] = made
        if announce && hasConnected {
            made.republishState()
            publishDiscovery(camera, config: config)
        }
        return made
    }

    private func startCamera(_ camera: ServeCamera) {
        camera.start()
        logger.info("camera \(camera.config.name) started")
    }

    private func command(topic: String, payload: [UInt8]) {
        let levels = topic.split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count >= 2 else { return }
        let name = String(levels[levels.count - 2])
        guard let camera = lock.withLock({ cameras[name] }) else {
            logger.warning("a command for the unknown camera '\(TerminalText.escaped(name))' was ignored")
            return
        }
        camera.handle(command: payload)
    }

    /// Reads the configuration file again: cameras whose settings changed restart, removed
    /// ones stop (and leave Home Assistant), new ones start; unchanged ones keep running. A
    /// file with problems changes nothing (they are logged). Broker settings need a restart.
    @discardableResult
    package func reload() -> Bool {
        guard let configPath else { return false }
        let fresh: ServeConfig
        do { fresh = try ServeConfig.load(path: configPath) } catch {
            // One log line per problem: a log handler escapes a newline inside a message.
            logger.error("reload refused: \(error.summary(outcome: "the running configuration stays"))")
            for line in error.problemLines { logger.error("reload refused: \(line)") }
            return false
        }
        let started: [ServeCamera] = lock.withLock {
            if fresh.mqtt != config.mqtt {
                logger.warning("the mqtt settings changed; they take effect when the daemon restarts")
            }
            if fresh.preview != config.preview {
                logger.warning("the preview settings changed; they take effect when the daemon restarts")
            }
            let wanted = Dictionary(fresh.cameras.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            var stopping: [ServeCamera] = []
            for (name, running) in cameras where wanted[name] != running.config || fresh.statsInterval != config.statsInterval {
                stopping.append(running)
                cameras[name] = nil
            }
            Self.stopAll(stopping)
            // After the stop, whose last `offline` and `faces` would otherwise be retained again.
            for old in stopping.map(\.config) {
                let new = wanted[old.name]
                if new == nil {
                    publishDiscovery(old, config: config, removing: true)
                    metrics?.removeCamera(old.name)
                }
                clearRetained(old, becoming: new, prefix: config.mqtt.topicPrefix)
            }
            preview?.directory.list(fresh.cameras.map(\.name), displayNames: Self.displayNames(fresh.cameras))
            let old = config
            config.cameras = fresh.cameras
            config.statsInterval = fresh.statsInterval
            config.retention = fresh.retention
            keepFiles(config)
            preview?.library?.set(config.previewShelves)
            let started = fresh.cameras.filter { cameras[$0.name] == nil }.map { makeCamera($0, announce: true) }
            let changed = stopping.count
            logger.notice(
                "configuration reloaded: \(fresh.cameras.count) camera(s), \(changed) stopped or restarted, \(fresh.cameras.filter { c in old.cameras.contains(c) }.count) unchanged")
            return started
        }
        for camera in started { startCamera(camera) }
        return true
    }

    /// Stops every camera (snapshots written, recordings finished), publishes `offline` for
    /// each and for the daemon, waits for the broker to take it all, and disconnects.
    package func shutdown() {
        let list = lock.withLock {
            defer { cameras = [:] }
            return Array(cameras.values)
        }
        Self.stopAll(list)
        lock.withLock { retention }?.stop()
        link.publish(topic: daemonAvailability, text: CameraTopics.offline, retain: true, latestOnly: true)
        if !link.flush(timeout: Self.flushTimeout) {
            logger.warning("the broker did not take every message within \(Self.flushTimeout) s; the rest is lost (or spooled)")
        }
        link.stop()
    }

    /// Stops cameras side by side: each may wait for a file to finish.
    private static func stopAll(_ cameras: [ServeCamera]) {
        DispatchQueue.concurrentPerform(iterations: cameras.count) { cameras[$0].stop() }
    }
}
