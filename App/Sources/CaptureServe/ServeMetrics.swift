import CaptureJobs
import CapturePreview
import Prometheus
import Synchronization

/// The figures `cvcam serve` exposes on `/metrics`, in one `PrometheusCollectorRegistry`.
///
/// Per camera (label `camera`):
///
/// | metric | type | what |
/// |---|---|---|
/// | `cvcam_frames_captured_total` | counter | frames the input delivered |
/// | `cvcam_frames_analysed_total` | counter | frames the detectors saw |
/// | `cvcam_frames_skipped_total` | counter | frames dropped because detection was busy (latest wins) |
/// | `cvcam_detection_latency_seconds` | histogram, label `stage` (`faces`, `codes`) | one stage's time on one analysed frame, 5 ms … 2 s |
/// | `cvcam_input_reconnects_total` | counter | times the input came back (frames flowing again) after it was lost |
/// | `cvcam_input_reconnect_attempts_total` | counter | times the input was opened again after it failed, successful or not |
/// | `cvcam_camera_online` | gauge | 1 while frames flow, else 0 |
/// | `cvcam_commands_refused_total` | counter | commands on `set` refused by the camera's rate limit |
///
/// A camera taken out of the configuration (`removeCamera`) takes its series with it, so an
/// alert on `cvcam_camera_online == 0` does not fire for a camera that no longer exists.
///
/// Daemon-wide MQTT figures: `cvcam_mqtt_queue_depth`, `cvcam_mqtt_spooled_messages` (gauges),
/// `cvcam_mqtt_dropped_messages_total`, `cvcam_mqtt_reconnects_total` (counters),
/// `cvcam_mqtt_connected` (gauge 0/1).
///
/// The registry is private to the instance (no global `MetricsSystem.bootstrap`), so each daemon
/// and each test has its own figures.
///
/// Threading: thread-safe; every method may be called from any thread or task.
package final class ServeMetrics: Sendable {
    /// Upper bounds of the detection latency buckets: 5 ms to 2 s (+Inf is implicit). Realtime
    /// detection at 720p takes a few milliseconds; seconds mean the box is saturated.
    package static let detectionLatencyBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2),
    ]

    /// Internal so retention's figures (`ServeRetention.swift`) join the same registry.
    let registry = PrometheusCollectorRegistry()
    /// Retention's series by camera, so a removed camera takes them with it.
    let retentionSeries = Mutex<[String: (counters: [Counter], gauges: [Gauge])]>([:])
    /// Handles by camera name, so a restarted camera keeps its counters (and its delta baseline).
    private let cameras = Mutex<[String: Camera]>([:])

    /// The daemon-wide MQTT figures.
    package let mqtt: MQTT

    package init() {
        mqtt = MQTT(registry: registry)
    }

    /// The handles of camera `name`, made on first use; the same object for the same name.
    package func camera(_ name: String) -> Camera {
        cameras.withLock { cameras in
            if let camera = cameras[name] { return camera }
            let camera = Camera(name: name, registry: registry)
            cameras[name] = camera
            return camera
        }
    }

    /// Removes camera `name`'s series from the output (it was taken out of the configuration);
    /// a camera of that name added later starts from 0.
    package func removeCamera(_ name: String) {
        let removed = cameras.withLock { $0.removeValue(forKey: name) }
        removed?.unregister(from: registry)
        if let series = retentionSeries.withLock({ $0.removeValue(forKey: name) }) {
            for counter in series.counters { registry.unregisterCounter(counter) }
            for gauge in series.gauges { registry.unregisterGauge(gauge) }
        }
    }

    /// Every metric in the Prometheus text exposition format (version 0.0.4).
    package func render() -> String {
        registry.emitToString()
    }

    /// One camera's metrics.
    ///
    /// Threading: thread-safe.
    package final class Camera: Sendable {
        /// The counter values the daemon's running totals were last seen at.
        package struct Totals: Sendable, Equatable {
            package var frames: Int = 0
            package var analysed: Int = 0
            package var skipped: Int = 0

            /// Creates the value from each of its properties.
            package init(frames: Int = 0, analysed: Int = 0, skipped: Int = 0) {
                self.frames = frames
                self.analysed = analysed
                self.skipped = skipped
            }
        }

        /// The `camera` label value.
        package let name: String
        package let framesCaptured: Counter
        package let framesAnalysed: Counter
        package let framesSkipped: Counter
        package let inputReconnects: Counter
        package let inputReconnectAttempts: Counter
        package let online: Gauge
        package let commandsRefused: Counter
        private let lastTotals = Mutex(Totals())
        /// One histogram per stage, made on its first observation (a camera without codes has
        /// no `codes` series); none once the camera was removed.
        private let latencies = Mutex<(removed: Bool, byStage: [LatencyRecorder.Stage: DurationHistogram])>((false, [:]))
        private let registry: PrometheusCollectorRegistry

        fileprivate init(name: String, registry: PrometheusCollectorRegistry) {
            self.name = name
            self.registry = registry
            let labels = [("camera", name)]
            framesCaptured = registry.makeCounter(
                descriptor: metric("cvcam_frames_captured_total", help: "Frames the camera's input delivered."),
                labels: labels)
            framesAnalysed = registry.makeCounter(
                descriptor: metric("cvcam_frames_analysed_total", help: "Frames the face and code detectors analysed."),
                labels: labels)
            framesSkipped = registry.makeCounter(
                descriptor: metric(
                    "cvcam_frames_skipped_total",
                    help: "Frames not analysed because detection was still busy with an earlier one."),
                labels: labels)
            inputReconnects = registry.makeCounter(
                descriptor: metric(
                    "cvcam_input_reconnects_total",
                    help: "Times the camera's input came back (frames flowing again) after it was lost."),
                labels: labels)
            inputReconnectAttempts = registry.makeCounter(
                descriptor: metric(
                    "cvcam_input_reconnect_attempts_total",
                    help: "Times the camera's input was opened again after it failed, successfully or not."),
                labels: labels)
            online = registry.makeGauge(
                descriptor: metric("cvcam_camera_online", help: "1 while the camera delivers frames, else 0."),
                labels: labels)
            commandsRefused = registry.makeCounter(
                descriptor: metric(
                    "cvcam_commands_refused_total", help: "Commands on the camera's set topic refused by its rate limit."),
                labels: labels)
        }

        /// Counts one command refused by the camera's rate limit.
        package func recordCommandRefused() {
            commandsRefused.increment()
        }

        /// Adds the growth of the session's running totals since the last call.
        ///
        /// A total lower than the one seen last means the camera's session was restarted and
        /// counts from 0 again: that total is all new growth. When the daemon knows it restarted
        /// the session, `sessionRestarted()` avoids losing the frames counted before the first
        /// update if they already exceed the old total.
        package func update(frames: Int, analysed: Int, skipped: Int) {
            let now = Totals(frames: max(0, frames), analysed: max(0, analysed), skipped: max(0, skipped))
            let growth = lastTotals.withLock { last in
                defer { last = now }
                return Totals(
                    frames: Self.growth(last.frames, now.frames), analysed: Self.growth(last.analysed, now.analysed),
                    skipped: Self.growth(last.skipped, now.skipped))
            }
            // Counters cannot go down, and an increment of 0 changes nothing.
            if growth.frames > 0 { framesCaptured.increment(by: Int64(growth.frames)) }
            if growth.analysed > 0 { framesAnalysed.increment(by: Int64(growth.analysed)) }
            if growth.skipped > 0 { framesSkipped.increment(by: Int64(growth.skipped)) }
        }

        /// The camera's session was made anew: its running totals start again from 0.
        package func sessionRestarted() {
            lastTotals.withLock { $0 = Totals() }
        }

        /// The totals `update` last saw.
        package var totalsSeen: Totals { lastTotals.withLock { $0 } }

        /// The latency histogram of `stage`, made on first use; nil after the camera was removed.
        package func detectionLatency(_ stage: LatencyRecorder.Stage) -> DurationHistogram? {
            latencies.withLock { latencies in
                guard !latencies.removed else { return nil }
                if let histogram = latencies.byStage[stage] { return histogram }
                let histogram = registry.makeDurationHistogram(
                    descriptor: metric(
                        "cvcam_detection_latency_seconds",
                        help: "Time one detection stage (label stage: faces or codes) spent on one analysed frame."),
                    labels: [("camera", name), ("stage", stage.rawValue)], buckets: ServeMetrics.detectionLatencyBuckets)
                latencies.byStage[stage] = histogram
                return histogram
            }
        }

        /// Records the time `stage` spent on one analysed frame.
        package func recordDetectionLatency(_ duration: Duration, stage: LatencyRecorder.Stage) {
            detectionLatency(stage)?.record(max(.zero, duration))
        }

        /// Counts one reconnection: the input came back (frames flow again) after it was lost.
        package func recordReconnect() {
            inputReconnects.increment()
        }

        /// Counts one attempt to open the input again after it failed.
        package func recordReconnectAttempt() {
            inputReconnectAttempts.increment()
        }

        /// Takes every series of this camera out of `registry`.
        fileprivate func unregister(from registry: PrometheusCollectorRegistry) {
            for counter in [framesCaptured, framesAnalysed, framesSkipped, inputReconnects, inputReconnectAttempts, commandsRefused] {
                registry.unregisterCounter(counter)
            }
            registry.unregisterGauge(online)
            let histograms = latencies.withLock { latencies in
                latencies.removed = true
                return Array(latencies.byStage.values)
            }
            for histogram in histograms { registry.unregisterDurationHistogram(histogram) }
        }

        /// Sets `cvcam_camera_online` to 1 or 0.
        package func setOnline(_ isOnline: Bool) {
            online.set(to: isOnline ? 1 : 0)
        }

        private static func growth(_ old: Int, _ new: Int) -> Int {
            new >= old ? new - old : new
        }
    }

    /// The MQTT connection's figures, for the whole daemon.
    ///
    /// Threading: thread-safe.
    package final class MQTT: Sendable {
        package let queueDepth: Gauge
        package let spooled: Gauge
        package let dropped: Counter
        package let reconnects: Counter
        package let connected: Gauge

        fileprivate init(registry: PrometheusCollectorRegistry) {
            queueDepth = registry.makeGauge(
                descriptor: metric("cvcam_mqtt_queue_depth", help: "Messages waiting to be sent to the MQTT broker."))
            spooled = registry.makeGauge(
                descriptor: metric(
                    "cvcam_mqtt_spooled_messages", help: "Messages held in the offline spool while the broker is away."))
            dropped = registry.makeCounter(
                descriptor: metric(
                    "cvcam_mqtt_dropped_messages_total", help: "Messages dropped because the queue or spool was full."))
            reconnects = registry.makeCounter(
                descriptor: metric(
                    "cvcam_mqtt_reconnects_total", help: "Times the connection to the MQTT broker was made again."))
            connected = registry.makeGauge(
                descriptor: metric("cvcam_mqtt_connected", help: "1 while connected to the MQTT broker, else 0."))
        }

        /// Sets the queue depth and the spool's size, as the client reports them.
        package func setQueue(depth: Int, spooled: Int) {
            queueDepth.set(to: Double(max(0, depth)))
            self.spooled.set(to: Double(max(0, spooled)))
        }

        /// Counts `count` dropped messages.
        package func recordDropped(_ count: Int = 1) {
            if count > 0 { dropped.increment(by: Int64(count)) }
        }

        /// Counts one reconnect to the broker.
        package func recordReconnect() {
            reconnects.increment()
        }

        /// Sets `cvcam_mqtt_connected` to 1 or 0.
        package func setConnected(_ isConnected: Bool) {
            connected.set(to: isConnected ? 1 : 0)
        }
    }
}

/// A descriptor whose name is `name` exactly: the names above already carry their unit suffix,
/// and spelling them whole keeps them greppable against the table.
private func metric(_ name: String, help: String) -> MetricNameDescriptor {
    MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
}
