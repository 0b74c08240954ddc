import Foundation
import Glibc
import Logging

/// The queue an ``MQTTClient`` owns between `publish` and the broker's PUBACK.
///
/// Why its own queue: libmosquitto's is unbounded and what it resends after a reconnect is not
/// specified, while `cvcam serve` must lose nothing across a broker outage and keep events in
/// order. So libmosquitto only ever holds the few messages of the in-flight window, and a message
/// leaves the outbox only when the broker acknowledges it.
///
/// The order of the queue is: in flight (at most a small window, oldest first) → spool files on
/// disk (older) → memory (newer). When memory passes `Limits` and a spool folder is set, the
/// oldest waiting messages are written to a new spool file (atomically: temporary file, fsync,
/// rename), so they keep their place; when the spool passes `maxSpoolBytes`, or there is no spool,
/// the oldest messages are dropped and counted. After a disconnect the unacknowledged in-flight
/// messages are sent again first, so a subscriber may see the last few twice (QoS 1 allows it)
/// but never a gap or a reordering. `stop()` writes what is still in memory to the spool, and a
/// spool left by an earlier run is sent before anything new.
///
/// `latestOnly` messages stay in memory, at most one waiting per topic, and are never dropped.
///
/// Acknowledgements are recorded in the spool file itself: each message's QoS byte gets its top
/// bit set when the broker acknowledges it (`pwrite(2)` of one byte), so a daemon killed while it
/// replays a spool file sends only what was not yet acknowledged when it starts again, and a file
/// whose messages are all acknowledged is removed (or, if it cannot be, skipped).
///
/// A spool folder that cannot be written (a read-only file system, no permission, a full disk,
/// not a folder) never stops the client: the outbox says so once, in a warning, and keeps
/// messages in memory only from then on, within the same limits. One that is unwritable from the
/// start is left as it is: its files are not sent, since their acknowledgements could not be
/// recorded and they would be sent again at every start.
///
/// Not thread-safe: the client calls it only while holding its lock. Public for `Limits`.
public final class MQTTOutbox {
    /// How much the outbox may hold before it spools or drops the oldest messages.
    public struct Limits: Sendable, Equatable {
        /// Messages in memory (in flight and waiting).
        public var maxMessages: Int
        /// Bytes of topic + payload in memory.
        public var maxBytes: Int
        /// A folder for spool files when memory is full (made if missing); nil: drop the oldest instead.
        public var spoolDirectory: String?
        /// Bytes of spool files on disk before the oldest are dropped.
        public var maxSpoolBytes: Int

        public init(
            maxMessages: Int = 10_000, maxBytes: Int = 16 << 20, spoolDirectory: String? = nil,
            maxSpoolBytes: Int = 256 << 20
        ) {
            self.maxMessages = maxMessages
            self.maxBytes = maxBytes
            self.spoolDirectory = spoolDirectory
            self.maxSpoolBytes = maxSpoolBytes
        }
    }

    struct Entry {
        var seq: UInt64
        var message: MQTTMessage
        var latestOnly: Bool
        /// The spool file it was read from: deleted once all its messages are acknowledged or dropped.
        var file: String?
        /// Written on the current connection (cleared on a disconnect, so it is sent again).
        var sent = false
        /// Where its QoS byte is in `file`, to mark it acknowledged.
        var ackOffset: Int?
        /// Marked acknowledged in its spool file (read back from a file only).
        var acknowledgedInFile = false
    }

    struct SpoolFile {
        var name: String
        var firstSeq: UInt64
        var count: Int
        var bytes: Int
    }

    let limits: Limits
    /// Messages sent and not yet acknowledged, at most.
    let window: Int
    private let logger: Logger
    /// The spool folder while it can be written; nil without one, or after it failed (memory only).
    private(set) var activeSpool: String?

    private(set) var inflight: [Entry] = []
    private var memory: [Entry] = []
    /// Topic + payload bytes of `inflight` and `memory`.
    private var memoryBytes = 0
    /// Files not yet read to the end, oldest first; the first may be partly read into `head`.
    private var spool: [SpoolFile] = []
    private var spoolBytes = 0
    private var head: (entries: [Entry], next: Int)?
    /// Read spool files → their messages not yet acknowledged or dropped.
    private var outstanding: [String: Int] = [:]
    private var nextSeq: UInt64 = 1
    private(set) var dropped = 0
    private var unreportedDrops = 0

    /// Opens (and makes) the spool folder and takes over the spool files left in it.
    init(limits: Limits, logger: Logger) throws(MQTTError) {
        guard limits.maxMessages >= 1, limits.maxBytes >= 1, limits.maxSpoolBytes >= 1 else {
            throw MQTTError(.invalidOptions, "the outbox limits must be at least 1 (maxMessages, maxBytes, maxSpoolBytes)")
        }
        self.limits = limits
        self.logger = logger
        window = min(32, limits.maxMessages)
        if let folder = limits.spoolDirectory { openSpool(folder) }
    }

    // MARK: Counters

    /// Messages in memory: in flight and waiting.
    var queued: Int { inflight.count + memory.count }
    /// Messages in spool files not yet read.
    var spooled: Int { spool.reduce(0) { $0 + $1.count } - (head?.next ?? 0) }
    var isEmpty: Bool { inflight.isEmpty && memory.isEmpty && spool.isEmpty }

    /// Drops since the last call, for a rate-limited warning.
    func takeDropReport() -> Int {
        defer { unreportedDrops = 0 }
        return unreportedDrops
    }

    // MARK: Queueing

    /// Queues a message at the end (replacing a waiting `latestOnly` one on its topic), then
    /// spools or drops the oldest while memory is over the limits.
    func append(_ message: MQTTMessage, delivery: MQTTDelivery) {
        let latestOnly = delivery == .latestOnly
        if latestOnly {
            if let i = memory.firstIndex(where: { $0.latestOnly && $0.message.topic == message.topic }) {
                memoryBytes -= memory.remove(at: i).message.size
            }
            if let i = inflight.firstIndex(where: { !$0.sent && $0.latestOnly && $0.message.topic == message.topic }) {
                finish(inflight.remove(at: i))
            }
        }
        memory.append(Entry(seq: nextSeq, message: message, latestOnly: latestOnly))
        nextSeq += 1
        memoryBytes += message.size
        enforceLimits()
    }

    private var overLimits: Bool { queued > limits.maxMessages || memoryBytes > limits.maxBytes }

    private func enforceLimits() {
        guard overLimits else { return }
        if activeSpool != nil {
            // Spill the oldest waiting events down to half the limits, so files hold batches.
            var count = queued
            var bytes = memoryBytes
            var batch: [Entry] = []
            var rest: [Entry] = []
            for entry in memory {
                if !entry.latestOnly && (count > limits.maxMessages / 2 || bytes > limits.maxBytes / 2) {
                    batch.append(entry)
                    count -= 1
                    bytes -= entry.message.size
                } else {
                    rest.append(entry)
                }
            }
            memory = rest
            memoryBytes = bytes
            if let kept = writeSpoolFile(batch) {
                // The spool failed (and is off now): the batch stays in memory, within its limits.
                memory = kept + memory
                memoryBytes += kept.reduce(0) { $0 + $1.message.size }
                enforceLimits()
            }
        } else {
            // Oldest first: unsent in-flight messages (after a disconnect), then waiting ones.
            while overLimits, let i = inflight.firstIndex(where: { !$0.sent && !$0.latestOnly }) {
                finish(inflight.remove(at: i))
                countDrop(1)
            }
            while overLimits, let i = memory.firstIndex(where: { !$0.latestOnly }) {
                memoryBytes -= memory.remove(at: i).message.size
                countDrop(1)
            }
        }
    }

    private func countDrop(_ n: Int) {
        dropped += n
        unreportedDrops += n
    }

    // MARK: Sending

    /// The next message to write on the current connection, now counted as in flight; nil when
    /// the window is full or nothing waits. Unacknowledged messages of an earlier connection come first.
    func nextToSend() -> Entry? {
        if let i = inflight.firstIndex(where: { !$0.sent }) {
            inflight[i].sent = true
            return inflight[i]
        }
        guard inflight.count < window else { return nil }
        var entry: Entry
        if let fromSpool = takeFromSpool() {
            entry = fromSpool
            memoryBytes += entry.message.size
        } else if !memory.isEmpty {
            entry = memory.removeFirst()
        } else {
            return nil
        }
        entry.sent = true
        inflight.append(entry)
        return entry
    }

    /// The broker acknowledged the message: it leaves the outbox. False if it is not in flight.
    @discardableResult
    func acknowledge(_ seq: UInt64) -> Bool {
        guard let i = inflight.firstIndex(where: { $0.seq == seq }) else { return false }
        finish(inflight.remove(at: i), acknowledged: true)
        return true
    }

    /// The connection ended: every in-flight message will be sent again, first, on the next one.
    func connectionLost() {
        for i in inflight.indices { inflight[i].sent = false }
    }

    /// A message left the outbox (acknowledged or dropped): its memory and its spool file's share.
    private func finish(_ entry: Entry, acknowledged: Bool = false) {
        memoryBytes -= entry.message.size
        guard let file = entry.file else { return }
        if acknowledged, let offset = entry.ackOffset { markAcknowledged(file, offset: offset, qos: entry.message.qos) }
        settle(file, done: 1)
    }

    // MARK: Spool

    private static let magic: [UInt8] = Array("CVMQSPL1".utf8)
    private static let suffix = ".spool"

    private func path(_ name: String) -> String { limits.spoolDirectory! + "/" + name }

    /// Makes the folder if needed and takes over the spool files in it; a folder that cannot be
    /// used leaves the outbox in memory only (said once).
    private func openSpool(_ folder: String) {
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            return warnMemoryOnly(folder, "it cannot be made (\(error.localizedDescription))", atStart: true)
        }
        guard access(folder, R_OK | W_OK | X_OK) == 0 else {
            return warnMemoryOnly(folder, "it cannot be written (\(String(cString: strerror(errno))))", atStart: true)
        }
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: folder) } catch {
            return warnMemoryOnly(folder, "it cannot be listed (\(error.localizedDescription))", atStart: true)
        }
        activeSpool = folder
        var lastSeq: UInt64 = 0
        for name in names.sorted() {
            if name.hasSuffix(Self.suffix + ".tmp") {
                unlink(path(name))  // a write cut short before its rename: never part of the spool
                continue
            }
            guard name.hasSuffix(Self.suffix), let first = UInt64(name.dropLast(Self.suffix.count)) else { continue }
            guard let data = FileManager.default.contents(atPath: path(name)), let entries = Self.decode([UInt8](data), file: name)
            else {
                quarantine(name, "it is not a complete spool file")
                continue
            }
            lastSeq = max(lastSeq, entries.last?.seq ?? first)
            let unacknowledged = entries.filter { !$0.acknowledgedInFile }.count
            if unacknowledged == 0 {
                // Every message was delivered; only the removal was cut short (or it failed).
                if unlink(path(name)) != 0 && errno != ENOENT {
                    logger.debug("MQTT spool: \(path(name)) holds only delivered messages and cannot be removed: \(String(cString: strerror(errno)))")
                }
                continue
            }
            spool.append(SpoolFile(name: name, firstSeq: first, count: unacknowledged, bytes: data.count))
            spoolBytes += data.count
        }
        nextSeq = lastSeq + 1
        if !spool.isEmpty {
            logger.notice("MQTT spool \(folder): \(spooled) messages left by an earlier run are sent first")
        }
    }

    /// The spool folder cannot be used: one warning, then memory only.
    private func warnMemoryOnly(_ folder: String, _ why: String, atStart: Bool) {
        let wasActive = activeSpool != nil
        activeSpool = nil
        guard atStart || wasActive else { return }
        let limitsText = "at most \(limits.maxMessages) messages and \(limits.maxBytes) bytes, the oldest dropped beyond"
        if atStart {
            logger.warning(
                "MQTT spool folder \(folder) is not used because \(why): messages wait in memory only (\(limitsText)); spool files already in it are left there, unsent, until it can be written")
        } else {
            logger.warning(
                "MQTT spool folder \(folder) cannot be written any more (\(why)): from now on messages wait in memory only (\(limitsText)); messages it delivered whose acknowledgement could not be recorded may be sent again after a restart")
        }
    }
    private static func spoolName(_ seq: UInt64) -> String {
        let digits = String(seq)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + suffix
    }

    /// Writes `batch` as one spool file after the others, making room by dropping the oldest files
    /// (then the batch's oldest messages) past `maxSpoolBytes`. Returns nil when written; when the
    /// file cannot be written the spool is off from now on, and it returns the messages the
    /// caller must keep in memory instead.
    private func writeSpoolFile(_ batch: [Entry]) -> [Entry]? {
        var batch = batch
        guard !batch.isEmpty else { return nil }
        guard let folder = activeSpool else { return batch }
        var bytes = Self.encode(batch)
        while spoolBytes + bytes.count > limits.maxSpoolBytes, !spool.isEmpty { dropHeadFile() }
        while spoolBytes + bytes.count > limits.maxSpoolBytes, !batch.isEmpty {
            batch.removeFirst()
            countDrop(1)
            bytes = Self.encode(batch)
        }
        guard let first = batch.first else { return nil }
        let name = Self.spoolName(first.seq)
        do {
            try Self.writeAtomically(bytes, to: path(name), folder: folder)
        } catch {
            warnMemoryOnly(folder, error.message, atStart: false)
            return batch
        }
        spool.append(SpoolFile(name: name, firstSeq: first.seq, count: batch.count, bytes: bytes.count))
        spoolBytes += bytes.count
        return nil
    }

    /// Drops the oldest spool file's unread messages (those already read are in flight).
    private func dropHeadFile() {
        let file = spool.removeFirst()
        spoolBytes -= file.bytes
        if let head {
            let remaining = head.entries.count - head.next
            self.head = nil
            countDrop(remaining)
            settle(file.name, done: remaining)
        } else {
            countDrop(file.count)
            remove(file.name)
        }
    }

    /// Removes a spool file whose messages are all delivered or dropped; a folder that refuses
    /// turns the spool off (the file's delivered messages are marked, so none is sent again).
    private func remove(_ name: String) {
        guard unlink(path(name)) != 0, errno != ENOENT, let folder = activeSpool else { return }
        warnMemoryOnly(folder, "removing \(name): \(String(cString: strerror(errno)))", atStart: false)
    }

    /// Marks the message at `offset` of spool file `name` acknowledged: the top bit of its QoS
    /// byte. The corresponding C functions are `open(2)`, `pwrite(2)` and `close(2)`; no fsync (a
    /// killed process loses nothing the kernel has; a power cut may send a few again, as QoS 1 allows).
    private func markAcknowledged(_ name: String, offset: Int, qos: Int) {
        let fd = open(path(name), O_WRONLY | O_CLOEXEC)
        var byte = UInt8(truncatingIfNeeded: qos) | 0x80
        let written = fd >= 0 ? pwrite(fd, &byte, 1, off_t(offset)) : -1
        let savedErrno = errno
        if fd >= 0 { close(fd) }
        guard written != 1, let folder = activeSpool else { return }
        warnMemoryOnly(folder, "recording a delivery in \(name): \(String(cString: strerror(savedErrno)))", atStart: false)
    }

    /// The next unread spool message, reading the oldest file when needed.
    private func takeFromSpool() -> Entry? {
        while let file = spool.first {
            if head == nil {
                guard let entries = readSpoolFile(file.name) else {
                    spool.removeFirst()
                    spoolBytes -= file.bytes
                    quarantine(file.name, "it is not a complete spool file")
                    continue
                }
                if entries.isEmpty {
                    spool.removeFirst()
                    spoolBytes -= file.bytes
                    remove(file.name)
                    continue
                }
                head = (entries, 0)
                outstanding[file.name] = entries.count
            }
            guard let (entries, next) = head, next < entries.count else {
                spool.removeFirst()
                spoolBytes -= file.bytes
                head = nil
                continue
            }
            if next + 1 == entries.count {
                spool.removeFirst()
                spoolBytes -= file.bytes
                head = nil
            } else {
                head = (entries, next + 1)
            }
            return entries[next]
        }
        return nil
    }

    /// `done` more of the file's messages are acknowledged or dropped; the file goes with the last.
    private func settle(_ name: String, done: Int) {
        guard let left = outstanding[name] else { return }
        if left - done <= 0 {
            outstanding[name] = nil
            remove(name)
        } else {
            outstanding[name] = left - done
        }
    }

    private func quarantine(_ name: String, _ why: String) {
        logger.error("MQTT spool: \(path(name)) is skipped because \(why); renamed to \(name).corrupt")
        rename(path(name), path(name + ".corrupt"))
    }

    /// At stop: writes every message not yet acknowledged that is not in an unread spool file
    /// (in flight, the rest of a partly read file, waiting in memory) to the spool, in order, and
    /// removes the files they were read from; the next client on this folder sends exactly those.
    /// Returns how many messages were lost instead (all of them when there is no spool folder).
    func persist() -> Int {
        var pending = inflight
        var readFiles = Set(outstanding.keys)
        if let head, let file = spool.first {
            pending += head.entries[head.next...]
            readFiles.insert(file.name)
            spool.removeFirst()
            spoolBytes -= file.bytes
            self.head = nil
        }
        pending += memory
        inflight.removeAll()
        memory.removeAll()
        memoryBytes = 0
        outstanding.removeAll()
        guard let folder = activeSpool else {
            // No spool, or it cannot be written: what came from spool files is still in them
            // (not marked delivered), the rest is lost.
            return pending.filter { $0.file == nil }.count
        }
        // Messages older than the first unread file go in a file named before it; the rest after.
        let boundary = spool.first?.firstSeq ?? UInt64.max
        var lost = 0
        var written: Set<String> = []
        for part in [pending.filter { $0.seq < boundary }, pending.filter { $0.seq >= boundary }] where !part.isEmpty {
            let sorted = part.sorted { $0.seq < $1.seq }
            let name = Self.spoolName(sorted[0].seq)
            do {
                try Self.writeAtomically(Self.encode(sorted), to: path(name), folder: folder)
                written.insert(name)
            } catch {
                logger.error("MQTT spool: \(error)")
                lost += part.count
            }
        }
        // Only after the new files are complete: a crash in between sends some twice, never none.
        for name in readFiles.subtracting(written) { remove(name) }
        return lost
    }

    // MARK: Spool file format
    // "CVMQSPL1", count (UInt32), last seq (UInt64), then per message: seq (UInt64), qos (UInt8),
    // retain (UInt8), topic length (UInt32), payload length (UInt32), topic, payload. Little-endian.
    // The QoS byte's top bit is set once the broker acknowledged the message.

    static func encode(_ entries: [Entry]) -> [UInt8] {
        var out = magic
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) } }
        put(UInt32(entries.count))
        put(entries.last?.seq ?? 0)
        for entry in entries {
            let topic = Array(entry.message.topic.utf8)
            put(entry.seq)
            put(UInt8(entry.message.qos))
            put(UInt8(entry.message.retain ? 1 : 0))
            put(UInt32(topic.count))
            put(UInt32(entry.message.payload.count))
            out += topic
            out += entry.message.payload
        }
        return out
    }

    /// The messages of a spool file, or nil when it is not exactly a complete spool file.
    static func decode(_ bytes: [UInt8], file: String?) -> [Entry]? {
        var offset = 0
        func take(_ n: Int) -> ArraySlice<UInt8>? {
            guard n >= 0, bytes.count - offset >= n else { return nil }
            defer { offset += n }
            return bytes[offset..<offset + n]
        }
        func get<T: FixedWidthInteger>(_: T.Type) -> T? {
            guard let slice = take(MemoryLayout<T>.size) else { return nil }
            return slice.reversed().reduce(T(0)) { $0 << 8 | T($1) }
        }
        guard take(magic.count).map(Array.init) == magic, let count = get(UInt32.self), get(UInt64.self) != nil else {
            return nil
        }
        var entries: [Entry] = []
        for _ in 0..<count {
            guard let seq = get(UInt64.self) else { return nil }
            let qosOffset = offset
            guard let qos = get(UInt8.self), let retain = get(UInt8.self),
                let topicLength = get(UInt32.self), let payloadLength = get(UInt32.self),
                let topic = take(Int(topicLength)), let payload = take(Int(payloadLength))
            else { return nil }
            let message = MQTTMessage(
                topic: String(decoding: topic, as: UTF8.self), payload: Array(payload), qos: Int(qos & 0x7F), retain: retain != 0)
            entries.append(
                Entry(seq: seq, message: message, latestOnly: false, file: file, ackOffset: qosOffset, acknowledgedInFile: qos & 0x80 != 0))
        }
        return offset == bytes.count ? entries : nil
    }

    /// The messages of a spool file not yet marked delivered; nil when it is not a complete file.
    private func readSpoolFile(_ name: String) -> [Entry]? {
        guard let data = FileManager.default.contents(atPath: path(name)) else { return nil }
        return Self.decode([UInt8](data), file: name)?.filter { !$0.acknowledgedInFile }
    }

    /// Temporary file, fsync, rename, fsync of the folder: a reader sees the whole file or none.
    /// The corresponding C functions are `open`, `write`, `fsync` and `rename`.
    static func writeAtomically(_ bytes: [UInt8], to path: String, folder: String) throws(MQTTError) {
        let temporary = path + ".tmp"
        func failure(_ what: String) -> MQTTError {
            MQTTError(.spool, "cannot \(what) \(temporary): \(String(cString: strerror(errno))); check the spool folder's space and permissions")
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("create") }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let error = failure("write")
                close(fd)
                unlink(temporary)
                throw error
            }
            written += n
        }
        guard fsync(fd) == 0 else {
            let error = failure("fsync")
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let error = failure("rename")
            unlink(temporary)
            throw error
        }
        let dir = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            fsync(dir)
            close(dir)
        }
    }
}
