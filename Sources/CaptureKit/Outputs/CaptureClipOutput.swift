import Dispatch
import Foundation
import Logging
import Synchronization

/// What keeps an event clip going: a face in view, a code in view, motion, or something an app
/// names. `CaptureClipOutput` records while at least one subject is in view.
///
/// Value type; thread-safe.
public enum ClipSubject: Hashable, Sendable, CustomStringConvertible {
    /// A face track (`MetadataFaceObject.faceID`).
    case face(Int)
    /// A code in view, by its symbology and payload (`ClipMetadataTrigger` makes the key).
    case code(String)
    /// Motion in the picture (a motion stage calls `subjectEntered(.motion, at:)` when motion
    /// starts and `subjectLeft(.motion, at:)` when it stops; `ClipMetadataTrigger` with `motion`
    /// does it from a metadata output's motion events).
    case motion
    /// Anything else an app wants a clip of.
    case other(String)

    public var description: String {
        switch self {
        case .face(let id): "face \(id)"
        case .code(let key): "code \(key)"
        case .motion: "motion"
        case .other(let name): name
        }
    }
}

/// One clip `CaptureClipOutput` wrote (or tried to).
///
/// Value type; thread-safe.
public struct CaptureClip: Sendable, Equatable {
    /// Why a clip ended.
    public enum Ending: String, Sendable, Equatable {
        /// `postRoll` passed after the last subject left.
        case postRollElapsed
        /// The clip reached `maxClipDuration`; when subjects are still in view, or the post-roll
        /// after the last one left is not over, the next clip follows on the next frame
        /// (`continuesPreviousClip`).
        case maximumDurationReached
        /// The session stopped (the input ended, or a stop): the clip holds every frame up to it.
        case sessionStopped
        /// Writing failed (`didFinishClip`'s error says why); the file plays up to its last
        /// fragment, or is absent when no frame could be written.
        case writeFailed
    }

    /// The file.
    public var url: URL
    /// Presentation times of the first and last frame in the file.
    public var firstFrameTime: MediaTime
    public var lastFrameTime: MediaTime
    /// Wall-clock moments of the first and last frame (the camera's clock mapped by
    /// `WallClock`; for files and synthetic scenes, when the output handled the frame).
    public var firstFrameDate: Date
    public var lastFrameDate: Date
    /// Frames in the file.
    public var frameCount: Int
    /// Bytes in the file.
    public var fileSize: Int64
    /// Every subject that was in view during the clip, in the order they came.
    public var subjects: [ClipSubject]
    /// When the subject that started the clip came into view (the clip starts `preRoll` before it).
    public var triggerTime: MediaTime
    /// Whether this clip follows on from one that reached `maxClipDuration`.
    public var continuesPreviousClip: Bool
    /// Why the clip ended.
    public var ending: Ending

    /// The face IDs among `subjects`, in order.
    public var faceIDs: [Int] {
        subjects.compactMap { if case .face(let id) = $0 { id } else { nil } }
    }

    /// Creates the value from each of its properties.
    public init(
        url: URL, firstFrameTime: MediaTime, lastFrameTime: MediaTime, firstFrameDate: Date, lastFrameDate: Date,
        frameCount: Int, fileSize: Int64, subjects: [ClipSubject], triggerTime: MediaTime, continuesPreviousClip: Bool,
        ending: Ending
    ) {
        self.url = url
        self.firstFrameTime = firstFrameTime
        self.lastFrameTime = lastFrameTime
        self.firstFrameDate = firstFrameDate
        self.lastFrameDate = lastFrameDate
        self.frameCount = frameCount
        self.fileSize = fileSize
        self.subjects = subjects
        self.triggerTime = triggerTime
        self.continuesPreviousClip = continuesPreviousClip
        self.ending = ending
    }
}

/// Receives the clips of a `CaptureClipOutput`, on the queue given to `setDelegate(_:queue:)`.
public protocol CaptureClipOutputDelegate: AnyObject, Sendable {
    /// The clip's file was created; its first frames follow at once.
    func clipOutput(_ output: CaptureClipOutput, didStartClipTo url: URL, triggeredAt time: MediaTime)
    /// The clip ended; `error` is nil unless `clip.ending` is `.writeFailed`. Called exactly once
    /// for every clip started, and also for a clip whose file could not be created (then
    /// `clip.frameCount` is 0 and there is no file) or whose every frame turned out to be past
    /// its end when a late `subjectLeft` came (`frameCount` 0; the file is removed).
    func clipOutput(_ output: CaptureClipOutput, didFinishClip clip: CaptureClip, error: CaptureError?)
}

extension CaptureClipOutputDelegate {
    public func clipOutput(_ output: CaptureClipOutput, didStartClipTo url: URL, triggeredAt time: MediaTime) {}
}

/// Records event clips: short movies around the moments something is in view, with a few
/// seconds before it (`preRoll`) and after it left (`postRoll`), like a doorbell camera's. It has
/// no AVFoundation counterpart; it is shaped like `CaptureMovieFileOutput` and writes the same
/// crash-safe Motion-JPEG AVI.
///
/// The output keeps the camera's last `preRoll` seconds (plus `eventLatencyAllowance`, since
/// detection reports a face a little after its frame was taken) as JPEGs in a ring buffer: an
/// MJPEG camera's own JPEGs as they came (`SampleBuffer.jpegData`, no re-encoding), other frames
/// encoded once at `jpegQuality`, scaled to fit `maximumFrameSize`. When a subject enters
/// (`subjectEntered(_:at:)`, e.g. from `ClipMetadataTrigger` on a face `enter`), a clip starts
/// with the buffered frames from `preRoll` before the subject's time; it goes on while any
/// subject is in view and ends `postRoll` after the last one left (`subjectLeft(_:at:)`), so its
/// first and last frames are the ones nearest those moments whenever the events arrive. A clip
/// never grows past `maxClipDuration`: the rest of the visit (subjects still in view, or the
/// post-roll after the last one left) goes on in the next clip from the next frame.
///
/// Files are `<namePrefix>-<yyyyMMdd-HHmmss.mmm>-clip.avi` (the first frame's local wall time,
/// `fileName(prefix:date:)`) in `folder`; a taken name gets `-2`, `-3`, … (up to
/// `SnapshotStore.maximumCollisionSuffix`), so no file is ever replaced. Every
/// `movieFragmentInterval` of clip time the file's headers are brought up to date and it is
/// fsynced: a process killed mid-clip leaves a file that plays up to the last fragment.
///
/// Encoding and writing run on the output's own queue, never on the capture thread; when it
/// falls behind a live camera, frames are dropped and counted (`droppedFrameCount`); a file
/// read as fast as possible waits instead.
///
/// Threading: thread-safe. Settings apply from the next frame; `subjectEntered` and
/// `subjectLeft` may be called from any thread (they are handled in the order called, on the
/// output's queue).
public final class CaptureClipOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: settings and counters are behind `settings` and `counters` (Mutexes); the
    // ring, the subjects in view and the clip being written are touched only on `queue`.

    private struct Settings {
        var folder: URL
        var namePrefix = "clip"
        var preRoll = 5.0
        var postRoll = 5.0
        var maxClipDuration = 120.0
        var fragmentInterval = 1.0
        var jpegQuality = 80
        var maximumFrameSize: CaptureDevice.Dimensions?
        var maximumBufferBytes = 64 << 20
        var eventLatencyAllowance = 3.0
        var delegate: (any CaptureClipOutputDelegate)?
        var delegateQueue: DispatchQueue?
        var frameClock = FrameClock.media
    }
    private struct Counters {
        var drops = 0
        var clips = 0
        var writing = false
        var bufferedSeconds = 0.0
    }

    /// One buffered frame: its JPEG and when it was taken.
    private struct Frame {
        var jpeg: Data
        var time: Double
        var mediaTime: MediaTime
        var duration: MediaTime
        var width: Int
        var height: Int
        var date: Date
    }

    /// When a frame in a clip was taken.
    private struct Stamp {
        var time: Double
        var mediaTime: MediaTime
        var date: Date
    }

    /// The clip being written. Queue only.
    private struct Clip {
        /// First frame time asked for (inclusive); the trigger's time minus `preRoll`.
        var start: Double
        /// Last frame time asked for (inclusive), once every subject left; nil while one is in view.
        var end: Double?
        /// Last frame time `maxClipDuration` allows.
        var cap: Double
        var trigger: MediaTime
        var subjects: [ClipSubject]
        var continues: Bool
        var url: URL?
        var writer: MJPEGAVIWriter?
        /// The frames in the file, in order.
        var written: [Stamp] = []
        var lastFragment = -Double.infinity
        var warnedAboutSize = false
    }

    private let settings: Mutex<Settings>
    private let counters = Mutex(Counters())
    private let queue = DispatchQueue(label: "cvcam.clip-output")
    private let mailbox = DeliveryMailbox<(SampleBuffer, CaptureConnection)>(capacity: 32)
    private let converter = FrameConverter()
    private let logger = Logger(label: "cvcam.clips")
    let fileCalls: any FileSystemCalls

    // Queue only.
    private var ring: [Frame] = []
    private var ringBytes = 0
    private var present: [ClipSubject: Double] = [:]
    private var clip: Clip?
    /// A clip asked for by a subject that entered after the current clip's end (its event
    /// overtook the frames): it starts once the current clip is finished.
    private var next: Clip?
    private var lastClipEnd: Double?
    private var retryAfter: Double?
    private var scalePool: PixelBufferPool?
    private var warnedAboutEncoding = false

    /// Times within this many seconds count as the same frame time.
    private static let epsilon = 1e-6
    /// After a failed clip, the time before another is tried while subjects stay in view.
    static let retryInterval = 2.0

    /// An output writing clips into `folder` (which must exist and be writable).
    public init(folder: URL) {
        settings = Mutex(Settings(folder: folder))
        fileCalls = SystemFileCalls()
        super.init()
        mailbox.discardsLateItems = false
    }

    init(folder: URL, fileCalls: any FileSystemCalls) {
        settings = Mutex(Settings(folder: folder))
        self.fileCalls = fileCalls
        super.init()
        mailbox.discardsLateItems = false
    }

    // MARK: Settings

    /// The folder clips are written to.
    public var folder: URL {
        get { settings.withLock { $0.folder } }
        set { settings.withLock { $0.folder = newValue } }
    }
    /// The start of every clip's file name (default "clip"): a camera's name, say.
    public var namePrefix: String {
        get { settings.withLock { $0.namePrefix } }
        set { settings.withLock { $0.namePrefix = newValue } }
    }
    /// Time before the trigger a clip starts with (default 5 s; 0…60 s).
    public var preRoll: MediaTime {
        get { MediaTime(seconds: settings.withLock { $0.preRoll }) }
        set { settings.withLock { $0.preRoll = min(60, max(0, newValue.seconds)) } }
    }
    /// Time after the last subject left a clip goes on for (default 5 s; 0…600 s).
    public var postRoll: MediaTime {
        get { MediaTime(seconds: settings.withLock { $0.postRoll }) }
        set { settings.withLock { $0.postRoll = min(600, max(0, newValue.seconds)) } }
    }
    /// Longest clip (default 120 s; 1 s…1 h); while subjects stay, the next clip follows.
    public var maxClipDuration: MediaTime {
        get { MediaTime(seconds: settings.withLock { $0.maxClipDuration }) }
        set { settings.withLock { $0.maxClipDuration = min(3600, max(1, newValue.seconds)) } }
    }
    /// Clip time between crash-safe points (headers rewritten, file fsynced; default 1 s).
    public var movieFragmentInterval: MediaTime {
        get { MediaTime(seconds: settings.withLock { $0.fragmentInterval }) }
        set { settings.withLock { $0.fragmentInterval = min(60, max(0.1, newValue.seconds)) } }
    }
    /// JPEG quality, 1…100, of frames encoded here (a camera's own JPEGs keep theirs; default 80).
    public var jpegQuality: Int {
        get { settings.withLock { $0.jpegQuality } }
        set { settings.withLock { $0.jpegQuality = max(1, min(100, newValue)) } }
    }
    /// Frames larger than this are scaled down to fit (aspect kept) before encoding; a camera's
    /// own JPEG passes untouched only when it fits. nil (default): the frame's own size.
    public var maximumFrameSize: CaptureDevice.Dimensions? {
        get { settings.withLock { $0.maximumFrameSize } }
        set { settings.withLock { $0.maximumFrameSize = newValue } }
    }
    /// Most bytes of JPEG the ring buffer holds (default 64 MiB); past it the oldest frames go,
    /// shortening the pre-roll.
    public var maximumBufferBytes: Int {
        get { settings.withLock { $0.maximumBufferBytes } }
        set { settings.withLock { $0.maximumBufferBytes = max(1 << 20, newValue) } }
    }
    /// How late a trigger may arrive after its frame and still get its full pre-roll (default
    /// 3 s): the ring holds `preRoll` plus this.
    public var eventLatencyAllowance: MediaTime {
        get { MediaTime(seconds: settings.withLock { $0.eventLatencyAllowance }) }
        set { settings.withLock { $0.eventLatencyAllowance = min(30, max(0, newValue.seconds)) } }
    }

    /// Sets the delegate and the serial queue it is called on (nil: a queue of the output's
    /// own). The delegate is retained.
    public func setDelegate(_ delegate: (any CaptureClipOutputDelegate)?, queue: DispatchQueue?) {
        settings.withLock {
            $0.delegate = delegate
            $0.delegateQueue = delegate == nil ? nil : (queue ?? DispatchQueue(label: "cvcam.clip-output.delegate"))
        }
    }

    /// Frames that could not be buffered (the encoder fell behind a live camera, or a frame of
    /// another size than its clip's), over the output's life.
    public var droppedFrameCount: Int { counters.withLock { $0.drops } }
    /// Clips started so far.
    public var clipCount: Int { counters.withLock { $0.clips } }
    /// Whether a clip is being written now.
    public var isWritingClip: Bool { counters.withLock { $0.writing } }
    /// Seconds of frames in the ring buffer now.
    public var bufferedDuration: MediaTime { MediaTime(seconds: counters.withLock { $0.bufferedSeconds }) }

    /// The file name of a clip whose first frame was taken at `date`: `<prefix>-<local
    /// yyyyMMdd-HHmmss.mmm>-clip.avi` (before any `-2`, `-3` collision suffix).
    public static func fileName(prefix: String, date: Date) -> String {
        "\(prefix)-\(LocalTimestamp(date).fileNameStamp)-clip.avi"
    }

    // MARK: Triggers

    /// `subject` came into view at `time` (the frame time it was first seen): a clip starts
    /// with the frames from `preRoll` before it, or the clip being written goes on.
    public func subjectEntered(_ subject: ClipSubject, at time: MediaTime) {
        queue.async { [self] in entered(subject, at: time) }
    }

    /// `subject` left; `time` is the frame time it was last seen. When no subject is left in
    /// view, the clip ends with the last frame at most `postRoll` after `time`.
    public func subjectLeft(_ subject: ClipSubject, at time: MediaTime) {
        queue.async { [self] in left(subject, at: time) }
    }

    /// Blocks until every frame and trigger handed to the output so far is handled and the
    /// delegate has been called for what that finished. Do not call it from the delegate's queue.
    public func waitUntilIdle() {
        mailbox.drain()
        queue.sync {}
        if let delegateQueue = settings.withLock({ $0.delegateQueue }) { delegateQueue.sync {} }
    }

    // MARK: Session hooks

    override func sessionWillStart(format: CaptureDevice.Format, input: CaptureDeviceInput) {
        let clock = input.device.source.timestampClock
        settings.withLock { $0.frameClock = clock }
        queue.async { [self] in
            ring = []
            ringBytes = 0
            present = [:]
            clip = nil
            next = nil
            lastClipEnd = nil
            retryAfter = nil
        }
    }

    override func receive(_ sample: SampleBuffer, from connection: CaptureConnection, canWait: Bool) {
        let outcome = mailbox.offer((sample, connection), canWait: canWait, queue: queue) { [self] item in
            buffer(item.0, connection: item.1)
        }
        if case .dropped = outcome { counters.withLock { $0.drops += 1 } }
    }

    override func drain() { mailbox.drain() }

    override func cancelPendingDeliveries() {
        let dropped = mailbox.cancelPending().count
        counters.withLock { $0.drops += dropped }
    }

    override func sessionDidStop() {
        queue.async { [self] in
            if var current = clip {
                // Every frame up to the stop that the clip asked for goes in.
                current.end = min(current.end ?? .infinity, ring.last?.time ?? -.infinity)
                clip = current
                writePending()
                finish(.sessionStopped, error: nil)
                startNext()
                if var following = clip {
                    following.end = min(following.end ?? .infinity, ring.last?.time ?? -.infinity)
                    clip = following
                    writePending()
                    finish(.sessionStopped, error: nil)
                }
            }
            next = nil
            present = [:]
            ring = []
            ringBytes = 0
            counters.withLock { $0.bufferedSeconds = 0 }
        }
    }

    // MARK: The output's queue

    private func buffer(_ sample: SampleBuffer, connection: CaptureConnection) {
        let s = settings.withLock { $0 }
        let frame: Frame
        do throws(CaptureError) {
            let (jpeg, width, height) = try jpeg(of: sample, connection: connection, settings: s)
            let date = WallClock.shared.date(for: sample.presentationTimeStamp, on: s.frameClock)
            frame = Frame(
                jpeg: jpeg, time: sample.presentationTimeStamp.seconds, mediaTime: sample.presentationTimeStamp,
                duration: sample.duration, width: width, height: height, date: date)
        } catch {
            counters.withLock { $0.drops += 1 }
            if !warnedAboutEncoding {
                warnedAboutEncoding = true
                logger.warning("a frame could not be encoded for the clip buffer (\(error.message)); such frames are left out")
            }
            return
        }
        // A source that starts again (a file looping) restarts its clock: what is buffered is another scene.
        if let last = ring.last, frame.time < last.time - Self.epsilon {
            if var current = clip {
                current.end = min(current.end ?? .infinity, last.time)
                clip = current
                writePending()
                finish(.sessionStopped, error: nil)
            }
            ring = []
            ringBytes = 0
            lastClipEnd = nil
        }
        ring.append(frame)
        ringBytes += frame.jpeg.count
        trimRing(settings: s)
        advance()
    }

    /// The frame's JPEG: the camera's own when it matches the pixels the connection delivers
    /// and fits, else the pixels (oriented, scaled to fit) encoded once.
    private func jpeg(of sample: SampleBuffer, connection: CaptureConnection, settings s: Settings)
        throws(CaptureError) -> (Data, Int, Int)
    {
        let t = connection.transform
        let fits = s.maximumFrameSize.map { sample.width <= $0.width && sample.height <= $0.height } ?? true
        if let data = sample.jpegData, t.rotation == 0, !t.mirrored, fits {
            return (data, sample.width, sample.height)
        }
        var frame = try converter.convert(sample, to: .bgr, rotation: t.rotation, mirrored: t.mirrored).pixelBuffer
        if let box = s.maximumFrameSize, frame.width > box.width || frame.height > box.height {
            let size = PhotoEncoder.fitted(.init(width: frame.width, height: frame.height), in: box)
            if scalePool.map({ $0.width != size.width || $0.height != size.height }) ?? true {
                scalePool = PixelBufferPool(width: size.width, height: size.height, pixelFormat: .bgr, maximumIdleBuffers: 2)
            }
            let scaled = try scalePool!.makeBuffer()
            try frame.resize(into: scaled)
            frame = scaled
        }
        return (Data(try ImageFile.encode(frame, as: .jpeg(quality: s.jpegQuality))), frame.width, frame.height)
    }

    /// Keeps `preRoll` + `eventLatencyAllowance` seconds and at most `maximumBufferBytes`, never
    /// a frame the clip being written still needs.
    private func trimRing(settings s: Settings) {
        guard let newest = ring.last?.time else { return }
        let keepFrom = newest - (s.preRoll + s.eventLatencyAllowance)
        var drop = 0
        var bytes = ringBytes
        while drop < ring.count - 1 {
            let f = ring[drop]
            let needed = clip.map { c in f.time > (c.written.last?.time ?? c.start - 1) } ?? false
            if needed { break }
            guard f.time < keepFrom - Self.epsilon || bytes > s.maximumBufferBytes else { break }
            bytes -= f.jpeg.count
            drop += 1
        }
        if drop > 0 {
            ring.removeFirst(drop)
            ringBytes = bytes
        }
        let span = (ring.last?.time ?? 0) - (ring.first?.time ?? 0)
        counters.withLock { $0.bufferedSeconds = span }
    }

    private func entered(_ subject: ClipSubject, at time: MediaTime) {
        let t = time.seconds
        if present[subject] == nil { present[subject] = t }
        let s = settings.withLock { $0 }
        if var following = next {
            if !following.subjects.contains(subject) { following.subjects.append(subject) }
            following.end = nil
            next = following
            return
        }
        if let current = clip, let end = current.end, t - s.preRoll > end + Self.epsilon {
            // After this clip's post-roll and pre-roll: a clip of its own, once this one is done.
            next = Clip(start: t - s.preRoll, end: nil, cap: .infinity, trigger: time, subjects: [subject], continues: false)
            advance()
            return
        }
        if var current = clip {
            if !current.subjects.contains(subject) { current.subjects.append(subject) }
            current.end = nil
            clip = current
            advance()
            return
        }
        if let retryAfter, t < retryAfter { return }
        startClip(at: t - s.preRoll, trigger: time, subjects: Array(present.keys.filter { $0 != subject }) + [subject], continues: false)
        advance()
    }

    private func left(_ subject: ClipSubject, at time: MediaTime) {
        guard present.removeValue(forKey: subject) != nil else { return }
        guard present.isEmpty else { return }
        let end = time.seconds + settings.withLock { $0.postRoll }
        if var following = next {
            following.end = end
            next = following
            return
        }
        guard var current = clip else { return }
        current.end = end
        // Frames written past the end (the event came after them) are taken back out.
        let keep = current.written.firstIndex { $0.time > end + Self.epsilon } ?? current.written.count
        if keep < current.written.count, let writer = current.writer {
            do throws(CaptureError) {
                try writer.truncate(toFrameCount: keep)
                current.written.removeLast(current.written.count - keep)
            } catch {
                clip = current
                return fail(error)
            }
        }
        clip = current
        advance()
    }

    private func startClip(at start: Double, trigger: MediaTime, subjects: [ClipSubject], continues: Bool) {
        let s = settings.withLock { $0 }
        // Frames already in the clip before never go in again (`writePending` takes frames
        // from `start` less epsilon, so the bound is two epsilons past the last one written).
        let from = max(start, (lastClipEnd ?? -.infinity) + 2 * Self.epsilon)
        clip = Clip(start: from, end: nil, cap: from + s.maxClipDuration, trigger: trigger, subjects: subjects, continues: continues)
        retryAfter = nil
    }

    /// Writes what the clip asks for and ends it once a frame past its end has been seen.
    private func advance() {
        if clip == nil, !present.isEmpty, let newest = ring.last?.time, let retry = retryAfter, newest >= retry {
            // A clip failed while subjects stayed: try again.
            startClip(
                at: newest, trigger: ring.last!.mediaTime, subjects: Array(present.keys), continues: true)
        }
        guard let current = clip, let newest = ring.last?.time else { return }
        writePending()
        guard clip != nil else { return }  // writing failed
        let limit = min(current.end ?? .infinity, current.cap)
        guard newest > limit + Self.epsilon else { return }
        let capped = current.end.map { $0 > current.cap } ?? true
        finish(capped ? .maximumDurationReached : .postRollElapsed, error: nil)
        if capped, !present.isEmpty, next == nil {
            startClip(at: limit, trigger: current.trigger, subjects: Array(present.keys), continues: true)
            writePending()
        } else if capped, let end = current.end {
            // Every subject left before the cut: the rest of its post-roll goes on in the next
            // clip, as it does when the leave comes after the cut (same frames, whenever the
            // event arrives).
            startClip(at: limit, trigger: current.trigger, subjects: current.subjects, continues: true)
            clip?.end = end
            advance()
        } else if next != nil {
            startNext()
            advance()
        }
    }

    /// Starts the clip a subject asked for while the previous one was still being written.
    private func startNext() {
        guard clip == nil, let following = next else { return }
        next = nil
        startClip(at: following.start, trigger: following.trigger, subjects: following.subjects, continues: false)
        clip?.end = following.end
    }

    /// Writes the ring's frames the clip asks for that are not in the file yet.
    private func writePending() {
        guard var current = clip else { return }
        let s = settings.withLock { $0 }
        let limit = min(current.end ?? .infinity, current.cap)
        let after = current.written.last?.time ?? -Double.infinity
        for frame in ring where frame.time > after + Self.epsilon && frame.time >= current.start - Self.epsilon {
            guard frame.time <= limit + Self.epsilon else { break }
            do throws(CaptureError) {
                if current.writer == nil { try open(&current, first: frame, settings: s) }
                guard let writer = current.writer else { return }
                guard frame.width == writer.width, frame.height == writer.height else {
                    counters.withLock { $0.drops += 1 }
                    if !current.warnedAboutSize {
                        current.warnedAboutSize = true
                        logger.warning(
                            "a \(frame.width)x\(frame.height) frame was left out of the \(writer.width)x\(writer.height) clip \(writer.path)")
                    }
                    continue
                }
                try writer.append(jpeg: frame.jpeg)
                current.written.append(Stamp(time: frame.time, mediaTime: frame.mediaTime, date: frame.date))
                if frame.time - current.lastFragment >= s.fragmentInterval - Self.epsilon {
                    try writer.fragment()
                    current.lastFragment = frame.time
                }
            } catch {
                clip = current
                return fail(error)
            }
        }
        clip = current
    }

    /// Creates the clip's file, named by its first frame, at the first free name.
    private func open(_ current: inout Clip, first frame: Frame, settings s: Settings) throws(CaptureError) {
        let name = Self.fileName(prefix: s.namePrefix, date: frame.date)
        let base = String(name.dropLast(4))
        var duration = frame.duration
        if duration.value <= 0 || duration.timescale <= 0 { duration = MediaTime(value: 1, timescale: 30) }
        for n in 1...SnapshotStore.maximumCollisionSuffix {
            let url = s.folder.appendingPathComponent(n == 1 ? name : "\(base)-\(n).avi")
            do throws(CaptureError) {
                current.writer = try MJPEGAVIWriter(
                    path: url.path, width: frame.width, height: frame.height, frameDuration: duration, calls: fileCalls)
                current.url = url
                break
            } catch where error.errno == EEXIST && n < SnapshotStore.maximumCollisionSuffix {
                continue
            }
        }
        counters.withLock {
            $0.clips += 1
            $0.writing = true
        }
        if let (delegate, queue) = delegate(), let url = current.url {
            let trigger = current.trigger
            queue.async { [self] in delegate.clipOutput(self, didStartClipTo: url, triggeredAt: trigger) }
        }
    }

    /// Ends the clip after a failure, leaving the file as its last fragment left it.
    private func fail(_ error: CaptureError) {
        retryAfter = (ring.last?.time ?? 0) + Self.retryInterval
        finish(.writeFailed, error: error)
    }

    /// Finishes the clip's file and tells the delegate.
    private func finish(_ ending: CaptureClip.Ending, error: CaptureError?) {
        guard let current = clip else { return }
        clip = nil
        counters.withLock { $0.writing = false }
        var failure = error
        var ending = ending
        if let writer = current.writer, current.written.isEmpty, ending != .writeFailed, let url = current.url {
            // Every frame it held was past its end (the leave came late): a file of no use, ours alone.
            writer.abandon()
            _ = FilePathBytes.withCString(url.path) { unlink($0) }
        } else if let writer = current.writer {
            if ending == .writeFailed {
                writer.abandon()
            } else {
                do throws(CaptureError) { try writer.finish() } catch {
                    ending = .writeFailed
                    failure = failure ?? error
                }
            }
        }
        let error = failure
        if let last = current.written.last { lastClipEnd = last.time }
        guard let url = current.url else {
            // Nothing was written and no file was made: a clip only of failure has no report
            // unless it failed.
            if let error { report(failedBeforeFile: current, error: error) }
            return
        }
        let first = current.written.first, last = current.written.last
        let made = CaptureClip(
            url: url, firstFrameTime: first.map(\.mediaTime) ?? current.trigger,
            lastFrameTime: last.map(\.mediaTime) ?? current.trigger, firstFrameDate: first?.date ?? Date(),
            lastFrameDate: last?.date ?? Date(), frameCount: current.written.count, fileSize: current.writer?.fileSize ?? 0,
            subjects: current.subjects, triggerTime: current.trigger, continuesPreviousClip: current.continues, ending: ending)
        if let (delegate, queue) = delegate() {
            queue.async { [self] in delegate.clipOutput(self, didFinishClip: made, error: error) }
        }
    }

    private func report(failedBeforeFile current: Clip, error: CaptureError) {
        let made = CaptureClip(
            url: URL(fileURLWithPath: error.path ?? folder.path), firstFrameTime: current.trigger, lastFrameTime: current.trigger,
            firstFrameDate: Date(), lastFrameDate: Date(), frameCount: 0, fileSize: 0, subjects: current.subjects,
            triggerTime: current.trigger, continuesPreviousClip: current.continues, ending: .writeFailed)
        if let (delegate, queue) = delegate() {
            queue.async { [self] in delegate.clipOutput(self, didFinishClip: made, error: error) }
        }
    }

    private func delegate() -> (any CaptureClipOutputDelegate, DispatchQueue)? {
        settings.withLock { s in s.delegate.flatMap { d in s.delegateQueue.map { (d, $0) } } }
    }
}

/// Starts and ends a `CaptureClipOutput`'s clips from a metadata output's events: a face
/// `enter` is a subject entering (at the face's frame time), its `leave` the subject leaving
/// (at the time it was last seen); with `codes`, a code's `appear` and `leave` likewise; with
/// `motion`, motion as the `.motion` subject, in view from a motion `start` to its `end` (whose
/// time is the last frame that moved: `CaptureMetadataOutput.motionDetection`).
///
/// Set it as the metadata output's delegate, or call `handle(_:)` from a delegate of your own
/// (one output has one delegate).
///
/// Threading: thread-safe; the metadata output calls it on its delegate queue.
public final class ClipMetadataTrigger: CaptureMetadataOutputObjectsDelegate, Sendable {
    /// The output whose clips it starts.
    public let clipOutput: CaptureClipOutput
    /// Whether faces start clips.
    public let faces: Bool
    /// Whether codes start clips.
    public let codes: Bool
    /// Whether motion starts clips.
    public let motion: Bool

    /// A trigger for `clipOutput`'s clips from faces and, when `codes` and `motion`, codes and motion.
    public init(clipOutput: CaptureClipOutput, faces: Bool = true, codes: Bool = false, motion: Bool = false) {
        self.clipOutput = clipOutput
        self.faces = faces
        self.codes = codes
        self.motion = motion
    }

    /// Passes the events that start and end clips to the clip output.
    public func handle(_ events: [MetadataEvent]) {
        for event in events {
            switch event {
            case .faceEntered(let f) where faces: clipOutput.subjectEntered(.face(f.faceID), at: f.time)
            case .faceLeft(let f) where faces: clipOutput.subjectLeft(.face(f.faceID), at: f.time)
            case .codeAppeared(let c) where codes: clipOutput.subjectEntered(.code(Self.key(c)), at: c.time)
            case .codeLeft(let c) where codes: clipOutput.subjectLeft(.code(Self.key(c)), at: c.time)
            case .motionStarted(let m) where motion: clipOutput.subjectEntered(.motion, at: m.time)
            case .motionEnded(let m) where motion: clipOutput.subjectLeft(.motion, at: m.time)
            default: break
            }
        }
    }

    /// A code's identity as a subject: its symbology and payload.
    public static func key(_ code: MetadataMachineReadableCodeObject) -> String {
        code.type.rawValue + ":" + (code.stringValue ?? Data(code.payload).base64EncodedString())
    }

    public func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [any MetadataObject], from connection: CaptureConnection
    ) {}

    public func metadataOutput(_ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection) {
        handle(events)
    }
}
