import CaptureKit
import Foundation
import Logging

/// One camera's files of one kind in one folder, and the limits they are kept within.
///
/// Value type; thread-safe.
package struct RetentionShelf: Sendable, Equatable {
    /// The camera's name (events, metrics and logs say it).
    package var camera: String
    /// The start of the camera's file names (`OwnFileNames`).
    package var prefix: String
    package var kind: FileKind
    package var folder: String
    package var limits: RetentionLimits

    package init(camera: String, prefix: String, kind: FileKind, folder: String, limits: RetentionLimits) {
        self.camera = camera
        self.prefix = prefix
        self.kind = kind
        self.folder = folder
        self.limits = limits
    }
}

/// What one sweep must keep to: each shelf's own limits, totals per kind across shelves
/// (`totalBytes`), and free space on every file system holding a shelf (`minFreeSpace`).
///
/// Value type; thread-safe.
package struct RetentionPolicy: Sendable, Equatable {
    package var shelves: [RetentionShelf]
    /// Most bytes of each kind across every shelf.
    package var totalBytes: [FileKind: Int64]
    /// Least free bytes on each file system holding a shelf.
    package var minFreeSpace: Int64?

    package init(shelves: [RetentionShelf], totalBytes: [FileKind: Int64] = [:], minFreeSpace: Int64? = nil) {
        self.shelves = shelves
        self.totalBytes = totalBytes
        self.minFreeSpace = minFreeSpace
    }

    /// Whether there is anything to keep to.
    package var hasLimits: Bool {
        minFreeSpace != nil || !totalBytes.isEmpty || shelves.contains { !$0.limits.isEmpty }
    }
}

/// Why retention removed a file.
package enum RetentionReason: String, Codable, Sendable, CaseIterable {
    case maxAge, maxBytes, minFreeSpace
}

/// Decides what goes: pure logic over what is on disk, so every rule is tested without files.
///
/// For bytes and free space, each shelf's newest item is never removed: it may be the file
/// being written (a recording segment, a clip; removing an open file frees nothing), and a
/// limit that only the newest breaks is a limit too small, said as such (`shortOfRoom`).
/// `maxAge` removes the newest too: a file being written is modified at every fragment, so it
/// is never that old. Otherwise the oldest go first, by modification time.
///
/// Threading: a namespace of pure functions; thread-safe.
package enum RetentionPlan {
    /// A shelf as the sweep found it: its items oldest first, and the file system it is on.
    package struct Found: Sendable {
        package var shelf: RetentionShelf
        package var items: [OwnItem]
        package var volume: UInt64?
        package var freeBytes: Int64?

        package init(shelf: RetentionShelf, items: [OwnItem], volume: UInt64?, freeBytes: Int64?) {
            self.shelf = shelf
            self.items = items
            self.volume = volume
            self.freeBytes = freeBytes
        }
    }

    /// One item to remove.
    package struct Removal: Sendable, Equatable {
        package var shelf: Int
        package var item: OwnItem
        package var reason: RetentionReason
    }

    /// What a sweep decides.
    package struct Decision: Sendable {
        package var removals: [Removal] = []
        /// Cameras whose limits cannot be met by removing their files, with why.
        package var shortOfRoom: [String: String] = [:]
    }

    package static func decide(_ found: [Found], policy: RetentionPolicy, now: Date) -> Decision {
        var decision = Decision()
        var removed = Set<[Int]>()  // [shelf, item index]
        func take(_ s: Int, _ i: Int, _ reason: RetentionReason) {
            guard removed.insert([s, i]).inserted else { return }
            decision.removals.append(Removal(shelf: s, item: found[s].items[i], reason: reason))
        }
        func isNewest(_ s: Int, _ i: Int) -> Bool { i == found[s].items.count - 1 }
        func kept(_ s: Int) -> [Int] { found[s].items.indices.filter { !removed.contains([s, $0]) } }
        func short(_ camera: String, _ why: String) { if decision.shortOfRoom[camera] == nil { decision.shortOfRoom[camera] = why } }

        // Each shelf's own limits.
        for (s, shelf) in found.enumerated() {
            let limits = shelf.shelf.limits
            if let maxAge = limits.maxAge {
                let cutoff = now.addingTimeInterval(-maxAge)
                for (i, item) in shelf.items.enumerated() where item.modified < cutoff { take(s, i, .maxAge) }
            }
            if let maxBytes = limits.maxBytes {
                var total = kept(s).reduce(Int64(0)) { $0 + shelf.items[$1].bytes }
                for i in kept(s) where total > maxBytes && !isNewest(s, i) {
                    total -= shelf.items[i].bytes
                    take(s, i, .maxBytes)
                }
                if total > maxBytes {
                    short(shelf.shelf.camera, "its newest \(shelf.shelf.kind.rawValue) alone take \(total) bytes, over its maxBytes of \(maxBytes)")
                }
            }
        }
        // Totals per kind across cameras: the oldest of all go first.
        for (kind, maxBytes) in policy.totalBytes.sorted(by: { $0.key < $1.key }) {
            let shelves = found.indices.filter { found[$0].shelf.kind == kind }
            var pool = shelves.flatMap { s in kept(s).map { (s, $0) } }
            pool.sort { OwnItem.olderFirst(found[$0.0].items[$0.1], found[$1.0].items[$1.1]) }
            var total = pool.reduce(Int64(0)) { $0 + found[$1.0].items[$1.1].bytes }
            for (s, i) in pool where total > maxBytes && !isNewest(s, i) {
                total -= found[s].items[i].bytes
                take(s, i, .maxBytes)
            }
            if total > maxBytes {
                for s in shelves {
                    short(found[s].shelf.camera, "the newest \(kind.rawValue) of every camera take \(total) bytes, over the total of \(maxBytes)")
                }
            }
        }
        // Free space, per file system: the oldest files on it go until enough would be free.
        if let minFree = policy.minFreeSpace {
            let volumes = Dictionary(grouping: found.indices.filter { found[$0].volume != nil }, by: { found[$0].volume! })
            for (_, shelves) in volumes.sorted(by: { $0.key < $1.key }) {
                guard let free = shelves.compactMap({ found[$0].freeBytes }).min(), free < minFree else { continue }
                // What this sweep already removes on the volume is freed too.
                var freed = decision.removals.filter { shelves.contains($0.shelf) }.reduce(Int64(0)) { $0 + $1.item.allocated }
                var pool = shelves.flatMap { s in kept(s).map { (s, $0) } }
                pool.sort { OwnItem.olderFirst(found[$0.0].items[$0.1], found[$1.0].items[$1.1]) }
                for (s, i) in pool where free + freed < minFree && !isNewest(s, i) {
                    freed += found[s].items[i].allocated
                    take(s, i, .minFreeSpace)
                }
                if free + freed < minFree {
                    for s in shelves {
                        short(
                            found[s].shelf.camera,
                            "\(found[s].shelf.folder) has \(free + freed) bytes free even without every older file of its cameras, under minFreeSpace \(minFree)")
                    }
                }
            }
        }
        return decision
    }
}

/// What retention tells its host: removals (to count, announce and log) and cameras that
/// cannot make room. `cvcam serve` publishes them per camera and counts them in its metrics;
/// `watch` and `record` print them as events.
///
/// Threading: called on the keeper's thread.
package protocol RetentionReporter: Sendable {
    /// `count` files (`bytes` bytes) of `camera`'s `kind` were removed for `reason`; `files`
    /// names the first `RetentionKeeper.filesNamedPerReport` of them.
    func removed(camera: String, kind: FileKind, reason: RetentionReason, count: Int, bytes: Int64, files: [RetentionEvent.File])
    /// `camera` cannot make room (`problem`), or can again (nil). Called once per change.
    func shortOfRoom(camera: String, problem: String?)
}

/// Keeps cvcam's files within their limits: a thread that sweeps every `interval` seconds
/// (and checks free space every `freeSpaceCheckInterval` seconds, sweeping at once when it is
/// low), removing the oldest of cvcam's own files first (`OwnFileNames`: nothing else in a
/// folder is touched; `OwnFolder`: no link is followed, no file that replaced another is
/// removed; `RetentionPlan`: each camera's newest file stays). Every removal is logged and
/// reported; a camera that cannot make room is said once and retried on every sweep.
///
/// Threading: `start`, `stop`, `update` and `sweep` from any thread; sweeps run one at a time.
package final class RetentionKeeper: @unchecked Sendable {
    // @unchecked: `policy`, `short`, `unreadable` and `stopping` are guarded by `lock`; sweeps
    // are serialised by `sweepLock`.
    private let lock = NSLock()
    private let sweepLock = NSLock()
    private var policy: RetentionPolicy
    private var stopping = false
    private var short: [String: String] = [:]
    private var unreadable: Set<String> = []
    private var thread: JoinedThread?
    private let wake = DispatchSemaphore(value: 0)
    private let reporter: any RetentionReporter
    private let logger: Logger
    package let interval: Double
    package let freeSpaceCheckInterval: Double
    /// At most this many removed files are named in one report (the count and bytes cover all).
    package static let filesNamedPerReport = 50

    package init(
        policy: RetentionPolicy, interval: Double, freeSpaceCheckInterval: Double = 2, reporter: any RetentionReporter,
        logger: Logger = Logger(label: "cvcam.retention")
    ) {
        self.policy = policy
        self.interval = max(0.05, interval)
        self.freeSpaceCheckInterval = max(0.05, min(freeSpaceCheckInterval, interval))
        self.reporter = reporter
        self.logger = logger
    }

    /// The shelves and limits now kept to.
    package var currentPolicy: RetentionPolicy { lock.withLock { policy } }

    /// Replaces the policy (a reload); the next sweep keeps to it.
    package func update(_ policy: RetentionPolicy) {
        lock.withLock { self.policy = policy }
        wake.signal()
    }

    /// Sweeps once on the caller's thread, then starts the sweeping thread.
    package func start() {
        // The first sweep runs here, before the caller writes anything: a disk that is full of
        // old files has room again before the first snapshot, clip or segment.
        sweep()
        lock.withLock { thread = JoinedThread(name: "cvcam.retention") { [self] in run() } }
    }

    /// Sweeps a last time, stops the thread and joins it (a sweep in progress finishes first).
    package func stop() {
        let running = lock.withLock {
            stopping = true
            return thread
        }
        guard let running else { return }
        wake.signal()
        running.join()
        lock.withLock { thread = nil }
    }

    private var isStopping: Bool { lock.withLock { stopping } }

    private func run() {
        var nextSweep = Date().addingTimeInterval(interval)
        while !isStopping {
            if Date() >= nextSweep || freeSpaceIsLow() {
                sweep()
                nextSweep = Date().addingTimeInterval(interval)
            }
            _ = wake.wait(timeout: .now() + min(freeSpaceCheckInterval, max(0.01, nextSweep.timeIntervalSinceNow)))
        }
        // A last sweep, so what a run wrote since the previous one is within limits when it ends.
        sweep()
    }

    /// Whether a folder's file system has less free space than `minFreeSpace` (a cheap
    /// `statvfs` per folder, between sweeps).
    private func freeSpaceIsLow() -> Bool {
        let policy = currentPolicy
        guard let minFree = policy.minFreeSpace else { return false }
        for folder in Set(policy.shelves.map(\.folder)) {
            var s = statvfs()
            if FilePathBytes.withCString(folder, { statvfs($0, &s) }) == 0, Int64(s.f_bavail) * Int64(s.f_frsize) < minFree {
                return true
            }
        }
        return false
    }

    /// What one sweep did.
    package struct Sweep: Sendable {
        package var removedFiles = 0
        package var removedBytes: Int64 = 0
        package var removals: [RetentionPlan.Removal] = []
        package var failures: [String] = []
    }

    /// Sweeps once now, on the caller's thread; returns what it removed.
    @discardableResult
    package func sweep(now: Date = Date()) -> Sweep {
        sweepLock.lock()
        defer { sweepLock.unlock() }
        let policy = currentPolicy
        var result = Sweep()
        guard policy.hasLimits else { return result }
        var folders: [String: OwnFolder] = [:]
        defer { for folder in folders.values { folder.close() } }
        var found: [RetentionPlan.Found] = []
        for shelf in policy.shelves {
            let folder: OwnFolder
            if let open = folders[shelf.folder] {
                folder = open
            } else {
                switch OwnFolder.open(shelf.folder) {
                case .success(let f):
                    folders[shelf.folder] = f
                    folder = f
                    _ = lock.withLock { unreadable.remove(shelf.folder) }
                case .failure(let e):
                    // A folder not made yet (no clip so far) holds nothing to keep within limits.
                    if e.errno != ENOENT { sayOnce(unreadable: shelf.folder, e) }
                    continue
                }
            }
            switch folder.items(OwnFileNames(kind: shelf.kind, prefix: shelf.prefix)) {
            case .success(let items):
                found.append(.init(shelf: shelf, items: items, volume: folder.volume, freeBytes: folder.freeBytes))
            case .failure(let e):
                sayOnce(unreadable: shelf.folder, e)
            }
        }
        let decision = RetentionPlan.decide(found, policy: policy, now: now)
        // Remove, then report per camera, kind and reason.
        var groups: [[String]: (files: [RetentionEvent.File], count: Int, bytes: Int64)] = [:]
        var order: [[String]] = []
        for removal in decision.removals {
            let shelf = found[removal.shelf].shelf
            guard let folder = folders[shelf.folder] else { continue }
            var bytes: Int64 = 0
            var gone: [OwnFile] = []
            for file in removal.item.files {
                switch folder.remove(file) {
                case .success:
                    bytes += file.bytes
                    gone.append(file)
                case .failure(let e) where e.errno == ENOENT:
                    continue  // removed by someone else meanwhile
                case .failure(let e):
                    let text = "cannot remove \(shelf.folder)/\(file.name): \(e)"
                    result.failures.append(text)
                    logger.error("\(TerminalText.escaped(text))")
                }
            }
            guard !gone.isEmpty else { continue }
            result.removedFiles += gone.count
            result.removedBytes += bytes
            result.removals.append(removal)
            let key = [shelf.camera, shelf.kind.rawValue, removal.reason.rawValue]
            if groups[key] == nil { order.append(key) }
            var group = groups[key] ?? ([], 0, 0)
            for file in gone where group.files.count < Self.filesNamedPerReport {
                group.files.append(.init(path: shelf.folder + "/" + file.name, bytes: file.bytes, modified: LocalTimestamp(file.modified).rfc3339))
            }
            group.count += gone.count
            group.bytes += bytes
            groups[key] = group
        }
        for key in order {
            guard let group = groups[key], let kind = FileKind(rawValue: key[1]), let reason = RetentionReason(rawValue: key[2]) else { continue }
            logger.notice(
                "\(TerminalText.escaped(key[0])): removed \(group.count) \(kind.rawValue) file(s), \(group.bytes) bytes (\(reason.rawValue))")
            reporter.removed(camera: key[0], kind: kind, reason: reason, count: group.count, bytes: group.bytes, files: group.files)
        }
        reportRoom(decision.shortOfRoom, cameras: Set(policy.shelves.map(\.camera)))
        return result
    }

    /// Says each change of a camera's "cannot make room" once.
    private func reportRoom(_ now: [String: String], cameras: Set<String>) {
        let (began, ended) = lock.withLock { () -> ([(String, String)], [String]) in
            let began = now.filter { short[$0.key] == nil }.map { ($0.key, $0.value) }
            let ended = short.keys.filter { now[$0] == nil }
            short = now
            return (began.sorted { $0.0 < $1.0 }, ended.sorted())
        }
        for (camera, why) in began {
            logger.warning("\(TerminalText.escaped(camera)) cannot make room: \(TerminalText.escaped(why)); retention keeps trying every sweep")
            reporter.shortOfRoom(camera: camera, problem: why)
        }
        for camera in ended where cameras.contains(camera) {
            logger.notice("\(TerminalText.escaped(camera)): its files are within their limits again")
            reporter.shortOfRoom(camera: camera, problem: nil)
        }
    }

    private func sayOnce(unreadable folder: String, _ e: FileErrorCode) {
        guard lock.withLock({ unreadable.insert(folder).inserted }) else { return }
        logger.error("retention cannot read \(TerminalText.escaped(folder)): \(e); its files are not kept within limits until it can")
    }
}
