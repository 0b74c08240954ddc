import CaptureJobs
import CaptureKit
import Foundation
import Logging
import CapturePreview
import Prometheus

extension ServeConfig {
    /// What the daemon's retention keeps to: every camera's snapshots, clips and recordings
    /// folders (its files found by its name), each with the camera's limits over the daemon's
    /// `maxAge` defaults; the daemon's `maxBytes` as totals per kind; its `minFreeSpace`.
    package var retentionPolicy: RetentionPolicy {
        var shelves: [RetentionShelf] = []
        for camera in cameras {
            func add(_ kind: FileKind, _ folder: String) {
                let defaults = RetentionLimits(maxAge: retention.limits[kind]?.maxAge)
                let limits = (camera.retention[kind] ?? RetentionLimits()).over(defaults)
                shelves.append(RetentionShelf(camera: camera.name, prefix: camera.name, kind: kind, folder: folder, limits: limits))
            }
            if let dir = camera.snapshotOptions?.dir { add(.snapshots, dir) }
            if let clips = camera.clips { add(.clips, clips.dir) }
            if let record = camera.record { add(.recordings, record.dir) }
        }
        return RetentionPolicy(
            shelves: shelves, totalBytes: retention.limits.compactMapValues(\.maxBytes), minFreeSpace: retention.minFreeSpace)
    }
}

extension ServeConfig {
    /// Where each camera's snapshots and clips are, for the dashboard.
    package var previewShelves: [String: [FileKind: PreviewLibrary.Shelf]] {
        var shelves: [String: [FileKind: PreviewLibrary.Shelf]] = [:]
        for camera in cameras {
            var own: [FileKind: PreviewLibrary.Shelf] = [:]
            if let dir = camera.snapshotOptions?.dir { own[.snapshots] = .init(folder: dir, prefix: camera.name) }
            if let clips = camera.clips { own[.clips] = .init(folder: clips.dir, prefix: camera.name) }
            shelves[camera.name] = own
        }
        return shelves
    }
}

/// Where the daemon's retention reports: a `retention` event on the camera's events topic for
/// each removal, an `error` event (`cannotMakeRoom`) when a camera cannot make room, and the
/// metrics.
///
/// Threading: thread-safe; called on the retention keeper's thread.
package struct ServeRetentionReporter: RetentionReporter {
    package let publisher: any ServePublisher
    package let prefix: String
    package let metrics: ServeMetrics?

    package init(publisher: any ServePublisher, prefix: String, metrics: ServeMetrics?) {
        self.publisher = publisher
        self.prefix = prefix
        self.metrics = metrics
    }

    package func removed(camera: String, kind: FileKind, reason: RetentionReason, count: Int, bytes: Int64, files: [RetentionEvent.File]) {
        let topics = CameraTopics(prefix: prefix, camera: camera)
        let event = RetentionEvent(kind: kind.rawValue, reason: reason.rawValue, count: count, bytes: bytes, files: files)
        publisher.publish(topic: topics.events, text: EventPrinter.encode(event))
        metrics?.retentionRemoved(camera: camera, kind: kind, reason: reason, files: count, bytes: bytes)
    }

    package func shortOfRoom(camera: String, problem: String?) {
        metrics?.setShortOfRoom(camera: camera, problem != nil)
        guard let problem else { return }
        let topics = CameraTopics(prefix: prefix, camera: camera)
        let event = ErrorEvent(code: "cannotMakeRoom", message: "\(camera) cannot make room: \(problem); retention keeps trying")
        publisher.publish(topic: topics.events, text: EventPrinter.encode(event))
    }
}

/// Retention's figures on `/metrics` (label `camera`, and `kind` and `reason` where they apply):
///
/// | metric | type | what |
/// |---|---|---|
/// | `cvcam_retention_removed_files_total` | counter | files retention removed |
/// | `cvcam_retention_removed_bytes_total` | counter | their bytes |
/// | `cvcam_retention_short_of_room` | gauge | 1 while the camera's limits cannot be met by removing its files |
extension ServeMetrics {
    package func retentionRemoved(camera: String, kind: FileKind, reason: RetentionReason, files: Int, bytes: Int64) {
        let labels = [("camera", camera), ("kind", kind.rawValue), ("reason", reason.rawValue)]
        let count = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                metricName: "cvcam_retention_removed_files_total", unitName: "", helpText: "Files retention removed to keep within limits."),
            labels: labels)
        let size = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                metricName: "cvcam_retention_removed_bytes_total", unitName: "", helpText: "Bytes of the files retention removed."),
            labels: labels)
        remember(camera, counters: [count, size])
        count.increment(by: Int64(max(0, files)))
        size.increment(by: max(0, bytes))
    }

    package func setShortOfRoom(camera: String, _ short: Bool) {
        let gauge = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                metricName: "cvcam_retention_short_of_room", unitName: "",
                helpText: "1 while the camera's retention limits cannot be met by removing its files, else 0."),
            labels: [("camera", camera)])
        remember(camera, gauges: [gauge])
        gauge.set(to: short ? 1 : 0)
    }

    /// Keeps the camera's series for `removeCamera` (the registry hands out one object per name and labels).
    private func remember(_ camera: String, counters: [Counter] = [], gauges: [Gauge] = []) {
        retentionSeries.withLock { all in
            var series = all[camera] ?? ([], [])
            for c in counters where !series.counters.contains(where: { $0 === c }) { series.counters.append(c) }
            for g in gauges where !series.gauges.contains(where: { $0 === g }) { series.gauges.append(g) }
            all[camera] = series
        }
    }
}
