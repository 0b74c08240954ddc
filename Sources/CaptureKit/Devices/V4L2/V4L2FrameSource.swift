import CV4L2
import Foundation
import Synchronization

/// What format negotiation asked for and what the driver granted (like libcamera's
/// `CameraConfiguration::validate()` reporting `Adjusted`). Drivers adjust silently: a size they
/// lack becomes the nearest one, a rate they lack the nearest rate.
///
/// Value type; thread-safe.
public struct V4L2Negotiation: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Four-character code, size and frame duration (in seconds, as `numerator/denominator`).
    public struct Request: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The four-character code ("YUYV", "MJPG").
        public var fourCC: String
        /// Width in pixels.
        public var width: Int
        /// Height in pixels.
        public var height: Int
        /// Frame duration numerator, seconds.
        public var frameDurationNumerator: Int
        /// Frame duration denominator.
        public var frameDurationDenominator: Int
        /// Frames per second.
        public var frameRate: Double { Double(frameDurationDenominator) / Double(max(frameDurationNumerator, 1)) }
        public var description: String {
            "\(fourCC) \(width)x\(height)@" + (frameRate == frameRate.rounded() ? "\(Int(frameRate))" : String(format: "%.3f", frameRate))
        }
    }
    /// What CaptureKit asked for (`VIDIOC_S_FMT`, `VIDIOC_S_PARM`).
    public var requested: Request
    /// What the driver answered with.
    public var granted: Request
    /// Whether the driver changed anything.
    public var wasAdjusted: Bool { requested != granted }
    public var description: String {
        wasAdjusted ? "requested \(requested), got \(granted) (adjusted by the driver)" : "\(granted)"
    }
}

/// A V4L2 capture node as a `FrameSource`: formats from `VIDIOC_ENUM_FMT`/`ENUM_FRAMESIZES`/
/// `ENUM_FRAMEINTERVALS`, streaming through mmap buffers (`VIDIOC_REQBUFS`, `QUERYBUF`, `QBUF`,
/// `DQBUF`, `STREAMON`, `STREAMOFF`), waiting with `poll`.
///
/// Frames: YUYV, NV12 and GREY are delivered as they are (`PixelFormat.yuyv`, …; conversion
/// happens in outputs), wrapping the mmap buffer without a copy; the buffer goes back to the
/// driver (`VIDIOC_QBUF`) when the last reference to the frame goes away. When too few buffers
/// would be left with the driver, the frame is copied into a pooled buffer instead. MJPEG is
/// decoded into pooled BGR buffers (`Imaging.decode`, `cv::imdecode`), and the camera's JPEG is kept
/// beside them (`SourceFrame.jpegData`, one copy of `bytesused` bytes), so a consumer that wants
/// JPEG need not encode again; a frame whose JPEG does not decode is dropped. Apart from that
/// copy, nothing is allocated per frame once the pools are warm. Timestamps are the driver's (monotonic clock), sequence numbers the
/// driver's, counted from the first frame of each stream. Streaming stops (`VIDIOC_STREAMOFF`)
/// on `close`, after a failure, and, at process exit, when the kernel closes the descriptor.
///
/// Threading: `open`/`nextFrame`/`close` on the capture thread (FrameSource's rule); the
/// properties and the control calls (through `CaptureDevice`) from any thread.
public final class V4L2FrameSource: FrameSource, @unchecked Sendable {
    // @unchecked: `stream`, `negotiation` and `exposureModeChoice` are behind Mutexes; `pool`,
    // `mjpegFrame`, `firstSequence` are touched only by the capture thread between open and close.

    /// The device node (`/dev/video0`).
    public let path: String
    /// The driver's name for the camera (`v4l2_capability.card`).
    public let card: String
    /// The driver (`uvcvideo`).
    public let driver: String
    /// Where the camera is attached (`usb-0000:00:14.0-1`): stable across reboots for a port.
    public let busInfo: String
    /// The syscalls seam this source uses.
    public let system: V4L2SystemCalls
    public let formats: [CaptureDevice.Format]
    public let isLive = true
    /// V4L2 drivers stamp buffers with CLOCK_MONOTONIC (V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC).
    public let timestampClock = FrameClock.monotonic
    public let pacing: FramePacing = .realTime

    /// Buffers requested from the driver.
    static let bufferCount: UInt32 = 6
    /// Frames lent out without a copy stop when fewer than this many buffers would remain queued.
    static let minimumQueuedBuffers = 2
    /// How long one `poll` waits, so cancellation is noticed within FrameSource's 200 ms.
    static let pollTimeoutMilliseconds: Int32 = 100

    private let stream = Mutex<V4L2Stream?>(nil)
    private let negotiation = Mutex<V4L2Negotiation?>(nil)
    let exposureModeChoice = Mutex<CaptureDevice.ExposureMode?>(nil)
    private var pool: PixelBufferPool?
    private var firstSequence: UInt32?

    /// Opens `path`, checks it is a video capture node and lists its formats.
    ///
    /// - Throws: `.permissionDenied`, `.deviceBusy`, `.deviceDisconnected`, `.unsupported`
    ///   (not a capture node, or no format CaptureKit can deliver), `.deviceFailure`.
    public convenience init(path: String, system: V4L2SystemCalls = .live) throws(CaptureError) {
        let descriptor: V4L2Descriptor
        do { descriptor = try V4L2Descriptor.open(path, system: system) } catch { throw error.captureError }
        defer { descriptor.close() }
        try self.init(descriptor: descriptor)
    }

    /// Builds the source from an open descriptor (discovery reuses its descriptor).
    init(descriptor: V4L2Descriptor) throws(CaptureError) {
        let cap: v4l2_capability
        do { cap = try descriptor.queryCapabilities() } catch { throw error.captureError }
        guard Self.isVideoCapture(cap) else {
            throw CaptureError(
                .unsupported, "\(descriptor.path) is not a video capture node (a metadata or output node?)",
                path: descriptor.path)
        }
        path = descriptor.path
        system = descriptor.system
        card = String(v4l2Field: cap.card)
        driver = String(v4l2Field: cap.driver)
        busInfo = String(v4l2Field: cap.bus_info)
        do { formats = try Self.enumerate(descriptor) } catch { throw error.captureError }
        guard !formats.isEmpty else {
            throw CaptureError(
                .unsupported, "\(card) (\(path)) offers no pixel format CaptureKit can deliver (YUYV, MJPEG, NV12, GREY)",
                path: path)
        }
    }

    /// Whether the node captures video (`device_caps` when present: a UVC camera's second node
    /// reports `V4L2_CAP_META_CAPTURE` only).
    static func isVideoCapture(_ cap: v4l2_capability) -> Bool {
        let caps = cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
        return caps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 && caps & UInt32(V4L2_CAP_STREAMING) != 0
    }

    /// The pixel layout CaptureKit delivers for a V4L2 format, nil when unsupported.
    static func pixelFormat(forFourCC fourCC: String) -> PixelFormat? {
        switch fourCC {
        case "YUYV": .yuyv
        case "NV12": .nv12
        case "GREY": .gray
        case "MJPG", "JPEG": .bgr
        default: nil
        }
    }

    /// Sizes tried inside a stepwise or continuous range.
    private static let commonSizes: [(Int, Int)] = [
        (320, 240), (640, 480), (800, 600), (1280, 720), (1920, 1080), (2560, 1440), (3840, 2160),
    ]

    private static func enumerate(_ d: V4L2Descriptor) throws(V4L2Error) -> [CaptureDevice.Format] {
        var out: [CaptureDevice.Format] = []
        for desc in try d.enumerateFormats() {
            let fourCC = FourCC.text(desc.pixelformat)
            guard let layout = pixelFormat(forFourCC: fourCC) else { continue }
            for (width, height) in try sizes(d, desc.pixelformat) {
                let ranges = try frameRates(d, desc.pixelformat, width, height)
                out.append(
                    CaptureDevice.Format(
                        mediaSubType: fourCC, pixelFormat: layout, dimensions: .init(width: width, height: height),
                        videoSupportedFrameRateRanges: ranges))
            }
        }
        return out
    }

    static func sizes(_ d: V4L2Descriptor, _ pixelFormat: UInt32) throws(V4L2Error) -> [(Int, Int)] {
        var out: [(Int, Int)] = []
        for size in try d.enumerateFrameSizes(pixelFormat: pixelFormat) {
            if size.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                out.append((Int(size.discrete.width), Int(size.discrete.height)))
            } else {
                let s = size.stepwise
                let fits = commonSizes.filter { w, h in
                    w >= s.min_width && w <= s.max_width && h >= s.min_height && h <= s.max_height
                        && (w - Int(s.min_width)) % Int(max(s.step_width, 1)) == 0
                        && (h - Int(s.min_height)) % Int(max(s.step_height, 1)) == 0
                }
                out += fits
                if !fits.contains(where: { $0 == (Int(s.max_width), Int(s.max_height)) }) {
                    out.append((Int(s.max_width), Int(s.max_height)))
                }
            }
        }
        return out
    }

    private static func frameRates(_ d: V4L2Descriptor, _ pixelFormat: UInt32, _ width: Int, _ height: Int)
        throws(V4L2Error) -> [CaptureDevice.FrameRateRange]
    {
        let intervals: [v4l2_frmivalenum]
        do {
            intervals = try d.enumerateFrameIntervals(pixelFormat: pixelFormat, width: UInt32(width), height: UInt32(height))
        } catch where error.errno == ENOTTY {
            intervals = []
        }
        var out: [CaptureDevice.FrameRateRange] = []
        for interval in intervals {
            if interval.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                if let t = duration(interval.discrete) { out.append(.init(minFrameDuration: t, maxFrameDuration: t)) }
            } else if let lo = duration(interval.stepwise.min), let hi = duration(interval.stepwise.max) {
                out.append(.init(minFrameDuration: lo, maxFrameDuration: hi))
            }
        }
        // A driver that cannot tell its rates streams at its own pace; 30 fps is what UVC
        // cameras without interval tables deliver.
        return out.isEmpty ? [.init(framesPerSecond: 30)] : out
    }

    static func duration(_ f: v4l2_fract) -> MediaTime? {
        guard f.numerator > 0, f.denominator > 0, f.denominator <= UInt32(Int32.max) else { return nil }
        return MediaTime(value: Int64(f.numerator), timescale: Int32(f.denominator))
    }

    /// The last format negotiation: requested and granted. nil before the first `open`.
    public var lastNegotiation: V4L2Negotiation? { negotiation.withLock { $0 } }

    /// Whether the source is streaming (between a successful `open` and `close`).
    public var isStreaming: Bool { stream.withLock { $0 != nil } }

    // MARK: FrameSource

    public func open(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) {
        close()
        let d: V4L2Descriptor
        do { d = try V4L2Descriptor.open(path, system: system) } catch { throw error.captureError }
        do {
            let new = try start(d, format: format, frameDuration: frameDuration)
            stream.withLock { $0 = new }
        } catch {
            d.close()
            throw error
        }
    }

    private func start(_ d: V4L2Descriptor, format: CaptureDevice.Format, frameDuration: MediaTime)
        throws(CaptureError) -> V4L2Stream
    {
        let requested = V4L2Negotiation.Request(
            fourCC: format.mediaSubType, width: format.dimensions.width, height: format.dimensions.height,
            frameDurationNumerator: Int(frameDuration.value), frameDurationDenominator: Int(frameDuration.timescale))
        let pix: v4l2_pix_format
        var interval: v4l2_fract?
        do {
            pix = try d.setFormat(
                pixelFormat: FourCC.code(format.mediaSubType), width: format.dimensions.width,
                height: format.dimensions.height)
            let wanted = v4l2_fract(numerator: UInt32(frameDuration.value), denominator: UInt32(frameDuration.timescale))
            do {
                interval = try d.setFrameInterval(wanted)
            } catch where error.errno == ENOTTY || error.errno == EINVAL {
                interval = try? d.getFrameInterval()  // drivers without S_PARM stream at their own rate
            }
        } catch {
            throw error.captureError
        }
        let grantedFourCC = FourCC.text(pix.pixelformat)
        let granted = V4L2Negotiation.Request(
            fourCC: grantedFourCC, width: Int(pix.width), height: Int(pix.height),
            frameDurationNumerator: Int(interval?.numerator ?? UInt32(frameDuration.value)),
            frameDurationDenominator: Int(interval?.denominator ?? UInt32(frameDuration.timescale)))
        negotiation.withLock { $0 = V4L2Negotiation(requested: requested, granted: granted) }
        guard let layout = Self.pixelFormat(forFourCC: grantedFourCC) else {
            throw CaptureError(
                .formatNotSupported,
                "\(card) answered a request for \(requested) with \(granted), which CaptureKit cannot decode; choose another format",
                path: path)
        }
        let compressed = grantedFourCC == "MJPG" || grantedFourCC == "JPEG"
        let bytesPerRow = compressed ? Int(pix.width) * 3 : max(Int(pix.bytesperline), layout.packedBytesPerRow(width: Int(pix.width)))
        let new: V4L2Stream
        do {
            new = try V4L2Stream.start(
                d, count: Self.bufferCount, width: Int(pix.width), height: Int(pix.height), bytesPerRow: bytesPerRow,
                fourCC: grantedFourCC, layout: layout)
        } catch {
            throw error.captureError
        }
        pool = PixelBufferPool(width: Int(pix.width), height: Int(pix.height), pixelFormat: layout)
        firstSequence = nil
        return new
    }

    public func nextFrame(isCancelled: @Sendable () -> Bool) throws(CaptureError) -> SourceFrame? {
        guard let s = stream.withLock({ $0 }), let pool else { return nil }
        while !isCancelled() {
            let dequeued: v4l2_buffer?
            do { dequeued = try s.dequeue(timeoutMilliseconds: Self.pollTimeoutMilliseconds) } catch {
                throw error.captureError
            }
            guard let buffer = dequeued else { continue }
            let index = Int(buffer.index)
            if buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 || buffer.bytesused == 0 {
                s.requeue(index)  // a corrupt transfer: the sequence gap reports the loss
                continue
            }
            let pixels: PixelBuffer
            var jpeg: Data?
            if s.isCompressed {
                let frame = try pool.makeBuffer()
                let bytes = UnsafeRawBufferPointer(
                    start: s.address(of: index), count: min(Int(buffer.bytesused), s.length(of: index)))
                do {
                    try Imaging.decode(bytes, into: frame, "decoding an MJPEG frame")
                    // Copied before the buffer goes back to the driver, which will overwrite it.
                    jpeg = Data(bytes)
                } catch {}
                s.requeue(index)
                guard jpeg != nil else { continue }  // a damaged JPEG (common on USB): drop the frame
                pixels = frame
            } else if s.lentCount < Int(s.count) - Self.minimumQueuedBuffers {
                s.lend(index)
                pixels = PixelBuffer(
                    wrapping: s.address(of: index), width: s.width, height: s.height, bytesPerRow: s.bytesPerRow,
                    pixelFormat: s.layout, release: { [s] in s.requeue(index) })
            } else {
                let frame = try pool.makeBuffer()
                let rows = s.layout == .nv12 ? s.height * 3 / 2 : s.height
                let rowBytes = s.layout.packedBytesPerRow(width: s.width)
                let src = s.address(of: index)
                for row in 0..<rows {
                    (frame.baseAddress + row * frame.bytesPerRow).copyMemory(
                        from: src + row * s.bytesPerRow, byteCount: rowBytes)
                }
                s.requeue(index)
                pixels = frame
            }
            let first = firstSequence ?? buffer.sequence
            firstSequence = first
            let micros = Int64(buffer.timestamp.tv_sec) * 1_000_000 + Int64(buffer.timestamp.tv_usec)
            return SourceFrame(
                pixelBuffer: pixels, presentationTimeStamp: MediaTime(value: micros, timescale: 1_000_000),
                sequenceNumber: UInt64(buffer.sequence &- first), jpegData: jpeg)
        }
        return nil
    }

    public func close() {
        let old = stream.withLock { s -> V4L2Stream? in
            defer { s = nil }
            return s
        }
        old?.shutdown()
        pool = nil
    }

    // MARK: Controls

    /// Runs `body` with a descriptor for control ioctls: the streaming one when open, otherwise
    /// one opened for the call.
    public func withControlDescriptor<T>(_ body: (V4L2Descriptor) throws(CaptureError) -> T) throws(CaptureError) -> T {
        if let s = stream.withLock({ $0 }), let result = try s.withOpenDescriptor(body) {
            return result
        }
        let d: V4L2Descriptor
        do { d = try V4L2Descriptor.open(path, system: system) } catch { throw error.captureError }
        defer { d.close() }
        return try body(d)
    }
}

/// One streaming session on a descriptor: the mmap buffers and which are lent out as frames.
/// Lives until `shutdown()` and the last frame wrapping one of its buffers are gone; then the
/// mappings are released (`munmap`).
///
/// Threading: thread-safe. `dequeue` from the capture thread; `requeue` from whichever thread
/// releases a frame; `shutdown` from the capture thread.
final class V4L2Stream: @unchecked Sendable {
    // @unchecked: the raw buffer addresses are immutable after start; mutable state is in `state`.
    let descriptor: V4L2Descriptor
    let count: UInt32
    let width: Int
    let height: Int
    let bytesPerRow: Int
    let layout: PixelFormat
    let isCompressed: Bool
    private let mappings: [(address: UnsafeMutableRawPointer, length: Int)]

    private struct State {
        var isOpen = true
        var lent: Set<Int> = []
    }
    private let state = Mutex(State())

    private init(
        descriptor: V4L2Descriptor, count: UInt32, width: Int, height: Int, bytesPerRow: Int, layout: PixelFormat,
        isCompressed: Bool, mappings: [(address: UnsafeMutableRawPointer, length: Int)]
    ) {
        self.descriptor = descriptor
        self.count = count
        self.width = width
        self.height = height
        self.bytesPerRow = bytesPerRow
        self.layout = layout
        self.isCompressed = isCompressed
        self.mappings = mappings
    }

    deinit {
        for m in mappings { _ = descriptor.system.munmap(m.address, m.length) }
    }

    /// Requests, maps and queues buffers, then starts streaming. The corresponding C functions
    /// are `ioctl(VIDIOC_REQBUFS)`, `ioctl(VIDIOC_QUERYBUF)`, `mmap`, `ioctl(VIDIOC_QBUF)` and
    /// `ioctl(VIDIOC_STREAMON)`. On failure everything mapped so far is unmapped again.
    static func start(
        _ d: V4L2Descriptor, count: UInt32, width: Int, height: Int, bytesPerRow: Int, fourCC: String,
        layout: PixelFormat
    ) throws(V4L2Error) -> V4L2Stream {
        var request = v4l2_requestbuffers()
        request.count = count
        request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        request.memory = V4L2_MEMORY_MMAP.rawValue
        try d.ioctl(CV4L2_VIDIOC_REQBUFS, .requestBuffers, &request)
        var mappings: [(address: UnsafeMutableRawPointer, length: Int)] = []
        do throws(V4L2Error) {
            for index in 0..<request.count {
                var buffer = v4l2_buffer()
                buffer.index = index
                buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
                buffer.memory = V4L2_MEMORY_MMAP.rawValue
                try d.ioctl(CV4L2_VIDIOC_QUERYBUF, .queryBuffer, &buffer)
                guard let address = d.system.mmap(d.fd, Int(buffer.length), Int64(buffer.m.offset)) else {
                    throw V4L2Error(.mapBuffer, errno: errno, path: d.path)
                }
                mappings.append((address, Int(buffer.length)))
            }
        } catch {
            for m in mappings { _ = d.system.munmap(m.address, m.length) }
            throw error
        }
        let stream = V4L2Stream(
            descriptor: d, count: request.count, width: width, height: height, bytesPerRow: bytesPerRow,
            layout: layout, isCompressed: fourCC == "MJPG" || fourCC == "JPEG", mappings: mappings)
        for index in 0..<request.count {
            var buffer = stream.bufferDescription(Int(index))
            try d.ioctl(CV4L2_VIDIOC_QBUF, .queueBuffer, &buffer)
        }
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        try d.ioctl(CV4L2_VIDIOC_STREAMON, .streamOn, &type)
        return stream
    }

    private func bufferDescription(_ index: Int) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = UInt32(index)
        buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        return buffer
    }

    /// The mapped memory of buffer `index`.
    func address(of index: Int) -> UnsafeMutableRawPointer { mappings[index].address }

    /// The size of buffer `index`'s mapping: a driver's `bytesused` must not read past it.
    func length(of index: Int) -> Int { mappings[index].length }

    /// Frames currently lent out without a copy.
    var lentCount: Int { state.withLock { $0.lent.count } }

    /// Marks a buffer as lent to a frame (it returns through `requeue`).
    func lend(_ index: Int) { state.withLock { _ = $0.lent.insert(index) } }

    /// Waits up to `timeoutMilliseconds` for a filled buffer and dequeues it; nil when none came.
    /// The corresponding C functions are `poll` and `ioctl(VIDIOC_DQBUF)`.
    func dequeue(timeoutMilliseconds: Int32) throws(V4L2Error) -> v4l2_buffer? {
        let (ready, revents) = descriptor.system.poll(descriptor.fd, Int16(POLLIN), timeoutMilliseconds)
        if ready < 0 {
            let error = errno
            if error == EINTR { return nil }
            throw V4L2Error(.poll, errno: error, path: descriptor.path)
        }
        if ready == 0 { return nil }
        _ = revents  // POLLERR (unplugged, stopped) is explained by DQBUF's errno below
        var buffer = bufferDescription(0)
        do {
            try descriptor.ioctl(CV4L2_VIDIOC_DQBUF, .dequeueBuffer, &buffer)
        } catch where error.errno == EAGAIN {
            return nil
        }
        return buffer
    }

    /// Gives a buffer back to the driver (`ioctl(VIDIOC_QBUF)`); a no-op once shut down. Called
    /// for copied frames right away and for lent frames when their last reference goes.
    func requeue(_ index: Int) {
        state.withLock { s in
            s.lent.remove(index)
            guard s.isOpen else { return }
            var buffer = bufferDescription(index)
            // An unplugged device fails with ENODEV here; DQBUF reports that to the session.
            try? descriptor.ioctl(CV4L2_VIDIOC_QBUF, .queueBuffer, &buffer)
        }
    }

    /// Runs `body` with the descriptor while it is still open.
    func withOpenDescriptor<T>(_ body: (V4L2Descriptor) throws(CaptureError) -> T) throws(CaptureError) -> T? {
        try state.withLock { (s: inout State) throws(CaptureError) -> T? in
            guard s.isOpen else { return nil }
            return try body(descriptor)
        }
    }

    /// Stops streaming and closes the descriptor (`ioctl(VIDIOC_STREAMOFF)`, `v4l2_close`).
    /// Mappings stay until the last lent frame is released.
    func shutdown() {
        state.withLock { s in
            guard s.isOpen else { return }
            s.isOpen = false
            var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
            try? descriptor.ioctl(CV4L2_VIDIOC_STREAMOFF, .streamOff, &type)
            descriptor.close()
        }
    }
}

extension V4L2FrameSource: DeviceCapabilities {
    public var capabilities: (any DeviceCapabilities)? { self }
    public var devicePath: String { path }
    public var framesInFlight: Int { Int(Self.bufferCount) }
    public var chosenExposureMode: CaptureDevice.ExposureMode? {
        get { exposureModeChoice.withLock { $0 } }
        set { exposureModeChoice.withLock { $0 = newValue } }
    }
}
