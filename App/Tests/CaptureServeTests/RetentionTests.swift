import CaptureKitTesting
import Foundation
import Synchronization
import Testing

@testable import CaptureJobs
@testable import CaptureServe
import AppTestSupport

/// Retention (issue #33 item 1): which names are cvcam's, what a sweep decides, what it removes
/// from a real folder (and what it never touches), how it reports, and the `retention:` keys.
@Suite struct RetentionTests {
    static let day = 86_400.0

    func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-retention-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Writes `bytes` bytes to `folder/name`, modified `age` seconds before `now`.
    @discardableResult
    func plant(_ folder: URL, _ name: String, bytes: Int = 1000, age: Double, now: Date) throws -> URL {
        let url = folder.appendingPathComponent(name)
        try Data(repeating: 0x5A, count: bytes).write(to: url)
        try FileManager.default.setAttributes([.modificationDate: now.addingTimeInterval(-age)], ofItemAtPath: url.path)
        return url
    }

    func names(_ folder: URL) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
    }

    /// What a keeper reported, in order.
    final class Reports: RetentionReporter {
        struct Removed: Equatable {
            var camera: String
            var kind: FileKind
            var reason: RetentionReason
            var count: Int
            var bytes: Int64
            var paths: [String]
        }
        let removed = Mutex<[Removed]>([])
        let short = Mutex<[(String, String?)]>([])
        /// The threads removals were reported on (lingering in their exit).
        let threads = ThreadNotes(lingers: true)

        func removed(camera: String, kind: FileKind, reason: RetentionReason, count: Int, bytes: Int64, files: [RetentionEvent.File]) {
            threads.noteCurrent()
            removed.withLock { $0.append(.init(camera: camera, kind: kind, reason: reason, count: count, bytes: bytes, paths: files.map(\.path))) }
        }
        func shortOfRoom(camera: String, problem: String?) { short.withLock { $0.append((camera, problem)) } }
    }

    // MARK: names

    @Test func onlyTheCamerasOwnNamesAreItsFiles() {
        let snapshots = OwnFileNames(kind: .snapshots, prefix: "door")
        for name in [
            "door-20261124-170307.345-face3.jpg", "door-20261124-170307.345-face3-5.jpg", "door-20261124-170307.345-face3-again.jpg",
            "door-20261124-170307.345-every-face.jpg", "door-20261124-170307.345-every-face2.jpg", "door-20261124-170307.345-requested.jpg",
            "door-20261124-170307.345-face3-2.jpg", "door-20261124-170307.345-face3-pre-01.jpg", "door-20261124-170307.345-face3.json",
        ] {
            #expect(snapshots.item(of: name) != nil, "\(name)")
        }
        #expect(snapshots.item(of: "door-20261124-170307.345-face3-pre-01.jpg") == "door-20261124-170307.345-face3")
        #expect(snapshots.item(of: "door-20261124-170307.345-face3.json") == "door-20261124-170307.345-face3")
        for name in [
            "notes.txt", "door.jpg", "door-2026-face3.jpg", "backdoor-20261124-170307.345-face3.jpg",
            "door-back-20261124-170307.345-face3.jpg", ".door-20261124-170307.345-face3.jpg", "door-20261124-170307.345-face3.jpg.tmp",
            "door-20261124-170307.345-face3.png", "door-20261124-170307.345-holiday.jpg", "door-20261124-170307.345.avi",
            "door-20261124-170307.345-clip.avi",
        ] {
            #expect(snapshots.item(of: name) == nil, "\(name)")
        }
        let clips = OwnFileNames(kind: .clips, prefix: "door")
        #expect(clips.item(of: "door-20261124-170307.345-clip.avi") != nil)
        #expect(clips.item(of: "door-20261124-170307.345-clip-2.avi") != nil)
        #expect(clips.item(of: "door-20261124-170307.345.avi") == nil)
        #expect(clips.item(of: "door-20261124-170307.345-clip.mp4") == nil)
        let recordings = OwnFileNames(kind: .recordings, prefix: "door")
        #expect(recordings.item(of: "door-20261124-170307.345.avi") != nil)
        #expect(recordings.item(of: "door-20261124-170307.345-3.avi") != nil)
        #expect(recordings.item(of: "door-20261124-170307.345-clip.avi") == nil)
        #expect(recordings.item(of: ".door-20261124-170307.345.avi.lock") == nil)
        // A camera name with regex characters is text, not a pattern.
        let dotted = OwnFileNames(kind: .recordings, prefix: "a.b")
        #expect(dotted.item(of: "a.b-20261124-170307.345.avi") != nil)
        #expect(dotted.item(of: "axb-20261124-170307.345.avi") == nil)
    }

    // MARK: the plan (no files)

    func item(_ key: String, bytes: Int64, age: Double, now: Date) -> OwnItem {
        let date = now.addingTimeInterval(-age)
        return OwnItem(key: key, files: [OwnFile(name: key + ".avi", bytes: bytes, allocated: bytes, modified: date, device: 1, inode: 1)])
    }

    @Test func thePlanRemovesTheOldestFirstAndNeverTheNewest() {
        let now = Date()
        let shelf = RetentionShelf(camera: "door", prefix: "door", kind: .recordings, folder: "/r", limits: RetentionLimits(maxAge: 2 * Self.day))
        let items = [
            item("a", bytes: 100, age: 5 * Self.day, now: now), item("b", bytes: 100, age: 3 * Self.day, now: now),
            item("c", bytes: 100, age: 1 * Self.day, now: now), item("d", bytes: 100, age: 60, now: now),
        ]
        var found = [RetentionPlan.Found(shelf: shelf, items: items, volume: 1, freeBytes: 1 << 40)]
        var decision = RetentionPlan.decide(found, policy: RetentionPolicy(shelves: [shelf]), now: now)
        #expect(decision.removals.map(\.item.key) == ["a", "b"])
        #expect(decision.removals.allSatisfy { $0.reason == .maxAge })
        #expect(decision.shortOfRoom.isEmpty)

        // Bytes: the oldest go until the rest fit; age removals count first.
        found[0].shelf.limits = RetentionLimits(maxAge: 2 * Self.day, maxBytes: 150)
        decision = RetentionPlan.decide(found, policy: RetentionPolicy(shelves: [found[0].shelf]), now: now)
        #expect(decision.removals.map(\.item.key) == ["a", "b", "c"])
        #expect(decision.removals.map(\.reason) == [.maxAge, .maxAge, .maxBytes])

        // Age removes the newest too (a file being written is modified at every fragment).
        found[0].shelf.limits = RetentionLimits(maxAge: 1)
        decision = RetentionPlan.decide(found, policy: RetentionPolicy(shelves: [found[0].shelf]), now: now)
        #expect(decision.removals.map(\.item.key) == ["a", "b", "c", "d"])

        // A limit only the newest breaks cannot be met: said, and nothing more is removed.
        found[0].shelf.limits = RetentionLimits(maxBytes: 50)
        decision = RetentionPlan.decide(found, policy: RetentionPolicy(shelves: [found[0].shelf]), now: now)
        #expect(decision.removals.map(\.item.key) == ["a", "b", "c"])
        #expect(decision.shortOfRoom["door"]?.contains("maxBytes") == true)
    }

    @Test func totalsAndFreeSpaceTakeTheOldestOfEveryCamera() {
        let now = Date()
        let door = RetentionShelf(camera: "door", prefix: "door", kind: .clips, folder: "/c", limits: RetentionLimits())
        let yard = RetentionShelf(camera: "yard", prefix: "yard", kind: .clips, folder: "/c", limits: RetentionLimits())
        let found = [
            RetentionPlan.Found(
                shelf: door, items: [item("d1", bytes: 100, age: 50, now: now), item("d2", bytes: 100, age: 10, now: now)], volume: 7,
                freeBytes: 1000),
            RetentionPlan.Found(
                shelf: yard, items: [item("y1", bytes: 100, age: 40, now: now), item("y2", bytes: 100, age: 30, now: now)], volume: 7,
                freeBytes: 1000),
        ]
        var decision = RetentionPlan.decide(found, policy: RetentionPolicy(shelves: [door, yard], totalBytes: [.clips: 250]), now: now)
        #expect(decision.removals.map(\.item.key) == ["d1", "y1"])
        #expect(decision.removals.allSatisfy { $0.reason == .maxBytes })

        // 1000 free, 1150 wanted: the oldest of the volume go, whoever's, until enough is free.
        decision = RetentionPlan.decide(found, policy: RetentionPolicy(shelves: [door, yard], minFreeSpace: 1150), now: now)
        #expect(decision.removals.map(\.item.key) == ["d1", "y1"])
        #expect(decision.removals.allSatisfy { $0.reason == .minFreeSpace })
        #expect(decision.shortOfRoom.isEmpty)

        // Wanting more than all old files give is said for every camera on the volume.
        decision = RetentionPlan.decide(found, policy: RetentionPolicy(shelves: [door, yard], minFreeSpace: 5000), now: now)
        #expect(decision.removals.count == 2)
        #expect(Set(decision.shortOfRoom.keys) == ["door", "yard"])
    }

    // MARK: a real folder

    @Test func aSweepRemovesOnlyTheCamerasOldFilesAndNeverFollowsALink() throws {
        let folder = try temporaryFolder()
        let outside = try temporaryFolder()
        defer {
            try? FileManager.default.removeItem(at: folder)
            try? FileManager.default.removeItem(at: outside)
        }
        let now = Date()
        let old = 10 * Self.day
        // The camera's: an old snapshot with its pre-frame and sidecar, an old one alone, a new one.
        try plant(folder, "door-20261001-101010.000-face1.jpg", bytes: 3000, age: old, now: now)
        try plant(folder, "door-20261001-101010.000-face1-pre-01.jpg", bytes: 2000, age: old, now: now)
        try plant(folder, "door-20261001-101010.000-face1.json", bytes: 100, age: old, now: now)
        try plant(folder, "door-20261002-101010.000-face2-again.jpg", bytes: 3000, age: old - 60, now: now)
        try plant(folder, "door-20261111-101010.000-face3.jpg", bytes: 3000, age: 60, now: now)
        // Not the camera's, all as old: another camera's, other names, a temporary file, a
        // link named like a snapshot (to a file elsewhere), a folder named like one.
        let foreign = [
            "yard-20261001-101010.000-face1.jpg", "holiday.jpg", "door-20261001-101010.000-face1.jpg.part",
            ".door-20261001-101010.000-face9.jpg",
        ]
        for name in foreign { try plant(folder, name, age: old, now: now) }
        let target = try plant(outside, "precious.jpg", age: old, now: now)
        try FileManager.default.createSymbolicLink(
            atPath: folder.appendingPathComponent("door-20261001-111111.000-face7.jpg").path, withDestinationPath: target.path)
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("door-20261001-121212.000-face8.jpg"), withIntermediateDirectories: false)

        let reports = Reports()
        let shelf = RetentionShelf(camera: "door", prefix: "door", kind: .snapshots, folder: folder.path, limits: RetentionLimits(maxAge: Self.day))
        let keeper = RetentionKeeper(policy: RetentionPolicy(shelves: [shelf]), interval: 3600, reporter: reports)
        let sweep = keeper.sweep(now: now)
        #expect(sweep.removedFiles == 4)
        #expect(sweep.removedBytes == 8100)
        #expect(sweep.failures.isEmpty)
        #expect(
            try names(folder)
                == Set(foreign + ["door-20261111-101010.000-face3.jpg", "door-20261001-111111.000-face7.jpg", "door-20261001-121212.000-face8.jpg"]))
        #expect(FileManager.default.fileExists(atPath: target.path))
        let removed = reports.removed.withLock { $0 }
        #expect(removed.count == 1)
        #expect(removed.first?.camera == "door" && removed.first?.kind == .snapshots && removed.first?.reason == .maxAge)
        #expect(removed.first?.count == 4 && removed.first?.bytes == 8100)
        #expect(removed.first?.paths.allSatisfy { $0.hasPrefix(folder.path + "/door-2026100") } == true)
        // A second sweep finds nothing more to do.
        #expect(keeper.sweep(now: now).removedFiles == 0)
        #expect(reports.removed.withLock { $0.count } == 1)
    }

    @Test func aCameraThatCannotMakeRoomSaysSoOnceAndKeepsTrying() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let now = Date()
        try plant(folder, "door-20261001-101010.000.avi", bytes: 5000, age: 300, now: now)
        try plant(folder, "door-20261001-101510.000.avi", bytes: 5000, age: 10, now: now)
        let publisher = RecordingPublisher()
        let metrics = ServeMetrics()
        let shelf = RetentionShelf(camera: "door", prefix: "door", kind: .recordings, folder: folder.path, limits: RetentionLimits(maxBytes: 4000))
        let keeper = RetentionKeeper(
            policy: RetentionPolicy(shelves: [shelf]), interval: 3600,
            reporter: ServeRetentionReporter(publisher: publisher, prefix: "cvcam", metrics: metrics))
        keeper.sweep(now: now)
        keeper.sweep(now: now)
        keeper.sweep(now: now)
        // The older file went; the newest alone is over the limit: one error, however many sweeps.
        #expect(try names(folder) == ["door-20261001-101510.000.avi"])
        let events = publisher.on("cvcam/door/events").compactMap(\.json)
        #expect(events.filter { $0["type"] as? String == "retention" }.count == 1)
        let retention = try #require(events.first { $0["type"] as? String == "retention" })
        #expect(retention["kind"] as? String == "recordings" && retention["reason"] as? String == "maxBytes")
        #expect(retention["count"] as? Int == 1 && retention["bytes"] as? Int == 5000)
        #expect((retention["files"] as? [[String: Any]])?.first?["path"] as? String == folder.path + "/door-20261001-101010.000.avi")
        let errors = events.filter { $0["type"] as? String == "error" }
        #expect(errors.count == 1)
        #expect(errors.first?["code"] as? String == "cannotMakeRoom")
        var text = metrics.render()
        #expect(ServeMetricsTests.sample(text, #"cvcam_retention_removed_files_total{camera="door",kind="recordings",reason="maxBytes"}"#) == 1)
        #expect(ServeMetricsTests.sample(text, #"cvcam_retention_removed_bytes_total{camera="door",kind="recordings",reason="maxBytes"}"#) == 5000)
        #expect(ServeMetricsTests.sample(text, #"cvcam_retention_short_of_room{camera="door"}"#) == 1)

        // A larger limit (a reload): within limits again, said once, the gauge back to 0.
        keeper.update(RetentionPolicy(shelves: [RetentionShelf(camera: "door", prefix: "door", kind: .recordings, folder: folder.path, limits: RetentionLimits(maxBytes: 6000))]))
        keeper.sweep(now: now)
        keeper.sweep(now: now)
        text = metrics.render()
        #expect(ServeMetricsTests.sample(text, #"cvcam_retention_short_of_room{camera="door"}"#) == 0)
        #expect(publisher.on("cvcam/door/events").compactMap(\.json).filter { $0["type"] as? String == "error" }.count == 1)
        // A camera taken out of the configuration takes its retention series with it.
        metrics.removeCamera("door")
        #expect(!metrics.render().contains(#"camera="door""#))
    }

    @Test func theKeeperSweepsBeforeStartReturnsAndOnceMoreWhenItStops() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let now = Date()
        try plant(folder, "door-20261001-101010.000-clip.avi", age: 3 * Self.day, now: now)
        try plant(folder, "door-20261101-101010.000-clip.avi", age: 60, now: now)
        let reports = Reports()
        let shelf = RetentionShelf(camera: "door", prefix: "door", kind: .clips, folder: folder.path, limits: RetentionLimits(maxAge: Self.day))
        let keeper = RetentionKeeper(policy: RetentionPolicy(shelves: [shelf]), interval: 3600, reporter: reports)
        keeper.start()
        // The first sweep is done when start returns: room is made before the caller writes.
        #expect(try names(folder) == ["door-20261101-101010.000-clip.avi"])
        // Files written meanwhile are swept when it stops (the interval is an hour).
        try plant(folder, "door-20261002-101010.000-clip.avi", age: 3 * Self.day, now: now)
        keeper.stop()
        #expect(try names(folder) == ["door-20261101-101010.000-clip.avi"])
        #expect(reports.removed.withLock { $0.count } == 2)
        // The last sweep ran on the keeper's thread, and stop() joined it: it has exited.
        #expect(reports.threads.all.count == 2)
        #expect(reports.threads.alive.filter { $0 != ThreadNotes.currentKernelThreadID() }.isEmpty)
        #expect(reports.removed.withLock { $0.first?.kind } == .clips)
    }

    // MARK: the configuration

    static let config = """
        mqtt: {broker: mqtt://b}
        retention:
          interval: 30
          minFreeSpace: 2G
          snapshots: {maxAge: 30d, maxBytes: 5G}
          recordings: {maxAge: 7d}
        cameras:
          - name: door
            input: synthetic:size=64x48
            faces: {}
            snapshots: {dir: /tmp/snaps}
            clips: {dir: /tmp/clips, preRoll: 3, postRoll: 4, maxClip: 60}
            record: {dir: /tmp/rec}
            retention:
              snapshots: {maxAge: 12h}
              clips: {maxBytes: 500M}
          - name: yard
            input: synthetic:size=64x48
            codes: [qr]
            record: {dir: /tmp/rec}
        """

    @Test func theRetentionSectionsBecomeOnePolicy() throws {
        let config = try ServeConfig.parse(Self.config)
        #expect(config.retention.interval == 30)
        #expect(config.retention.minFreeSpace == 2 << 30)
        #expect(config.cameras[0].retention[.snapshots] == RetentionLimits(maxAge: 12 * 3600))
        #expect(config.cameras[0].clips?.options.preRoll == 3)
        let policy = config.retentionPolicy
        #expect(policy.minFreeSpace == 2 << 30)
        #expect(policy.totalBytes == [.snapshots: 5 << 30])
        func shelf(_ camera: String, _ kind: FileKind) -> RetentionShelf? { policy.shelves.first { $0.camera == camera && $0.kind == kind } }
        // A camera's own maxAge wins; the daemon's is the default; maxBytes per camera is the camera's own.
        #expect(shelf("door", .snapshots)?.limits == RetentionLimits(maxAge: 12 * 3600))
        #expect(shelf("door", .snapshots)?.folder == "/tmp/snaps")
        #expect(shelf("door", .clips)?.limits == RetentionLimits(maxBytes: 500 << 20))
        #expect(shelf("door", .recordings)?.limits == RetentionLimits(maxAge: 7 * Self.day))
        #expect(shelf("yard", .recordings)?.limits == RetentionLimits(maxAge: 7 * Self.day))
        #expect(shelf("yard", .snapshots) == nil)
        #expect(policy.shelves.count == 4)
    }

    @Test func clipsStartOnFacesByDefaultOnCodesWhenAskedAndNeverOnWhatTheCameraCannotSee() throws {
        func clips(_ camera: String) throws -> ServeConfig.Clips? {
            try ServeConfig.parse("mqtt: {broker: mqtt://b}\ncameras: [{name: a, input: synthetic:size=8x8, \(camera)}]").cameras[0].clips
        }
        #expect(try clips("faces: {}, clips: {dir: /tmp/c}").map { [$0.faces, $0.codes] } == [true, false])
        #expect(try clips("codes: [qr], clips: {dir: /tmp/c}").map { [$0.faces, $0.codes] } == [false, true])
        #expect(try clips("faces: {}, codes: [qr], clips: {dir: /tmp/c, triggers: [faces, codes]}").map { [$0.faces, $0.codes] } == [true, true])
        #expect(try clips("faces: {}, clips: {dir: /tmp/c, preRoll: 2, postRoll: 3, maxClip: 30}")?.options.maxClip == 30)
        // Motion is on unless `motion: false`: it can start clips, with faces and codes or alone.
        #expect(try clips("codes: [qr], clips: {dir: /tmp/c, triggers: [motion]}").map { [$0.faces, $0.codes, $0.motion] } == [false, false, true])
        #expect(try clips("faces: {}, codes: [qr], clips: {dir: /tmp/c, triggers: [faces, codes, motion]}").map { [$0.faces, $0.codes, $0.motion] } == [true, true, true])
        #expect(try clips("faces: {}, clips: {dir: /tmp/c}")?.motion == false)
        for (camera, fragment) in [
            ("codes: [qr], clips: {dir: /tmp/c, triggers: [faces]}", "faces start clips only"),
            ("faces: {}, motion: false, clips: {dir: /tmp/c, triggers: [motion]}", "motion starts clips only on a camera that detects motion"),
            ("faces: {}, clips: {dir: /tmp/c, triggers: [people]}", "must be a list of faces, codes and motion"),
            ("faces: {}, clips: {dir: /tmp/c, triggers: []}", "is empty"),
            ("faces: {}, clips: {preRoll: 2}", "missing"),
            ("faces: {}, clips: {dir: /tmp/c, preRoll: 61}", "preRoll"),
        ] {
            let error = try #require(throws: ServeConfigError.self, "\(camera)") {
                try ServeConfig.parse("mqtt: {broker: mqtt://b}\ncameras: [{name: a, input: synthetic:size=8x8, \(camera)}]")
            }
            #expect(error.problems.contains { ($0.path + " " + $0.message).contains(fragment) }, "\(camera) → \(error.description)")
        }
    }

    @Test func badRetentionValuesAreProblems() throws {
        for (yaml, path, fragment) in [
            ("retention: {snapshots: {maxAge: forever}}", "retention.snapshots.maxAge", "duration"),
            ("retention: {snapshots: {maxAge: 0}}", "retention.snapshots.maxAge", "duration"),
            ("retention: {minFreeSpace: lots}", "retention.minFreeSpace", "size"),
            ("retention: {videos: {maxAge: 1d}}", "retention", "videos"),
            ("retention: {snapshots: {keep: 3}}", "retention.snapshots", "keep"),
        ] {
            let text = "mqtt: {broker: mqtt://b}\n\(yaml)\ncameras: [{name: a, input: synthetic:size=8x8, codes: [qr]}]"
            let error = try #require(throws: ServeConfigError.self, "\(yaml)") { try ServeConfig.parse(text) }
            #expect(error.problems.contains { $0.path.contains(path) && ($0.path + $0.message).contains(fragment) }, "\(yaml) → \(error.description)")
        }
        // A camera's limits on a kind it does not write are a mistake worth saying.
        let text = "mqtt: {broker: mqtt://b}\ncameras: [{name: a, input: synthetic:size=8x8, codes: [qr], retention: {clips: {maxAge: 1d}}}]"
        let error = try #require(throws: ServeConfigError.self) { try ServeConfig.parse(text) }
        #expect(error.problems.contains { $0.path.contains("retention.clips") && $0.message.contains("no clips") }, "\(error.description)")
        // The daemon-wide keys are not a camera's.
        let interval = "mqtt: {broker: mqtt://b}\ncameras: [{name: a, input: synthetic:size=8x8, codes: [qr], retention: {interval: 5}}]"
        #expect(throws: ServeConfigError.self) { try ServeConfig.parse(interval) }
    }
}
