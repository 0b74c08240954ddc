import CaptureJobs
import CaptureKit
import Foundation
import Hummingbird
import Synchronization

/// The preview's video: each frame the video data output delivers, at most `framesPerSecond` a
/// second, becomes one JPEG handed to every viewer. A frame that carries the camera's own JPEG
/// (`SampleBuffer.jpegData`: an MJPEG camera, neither rotated nor mirrored) and needs no scaling
/// is sent as those bytes, untouched (the overlay is drawn by the page, never burnt in); any
/// other frame is encoded once (`ImageFile.encode`, `cv::imencode`) at `maximumSize` and
/// `quality`. Nothing is sent or encoded while nobody watches.
///
/// A thumbnail (`thumbnail()`, for the list of cameras) is made only when asked for, from the
/// next frame, at most `thumbnailSize` and kept `thumbnailMaxAge` seconds: however many pages
/// ask, a camera encodes at most one small JPEG in that time, and none while nobody asks.
///
/// A viewer is an `AsyncStream` that keeps only the newest frame: a slow browser skips frames
/// instead of queueing them, so neither capture nor memory waits for it. The encoder itself
/// runs on the video output's delegate queue, whose late frames the output drops (and counts)
/// rather than holding up capture.
///
/// Threading: thread-safe. The delegate method runs on the video output's queue; `frames()`,
/// `finish()` and the counters from anywhere.
package final class MJPEGFanOut: CaptureVideoDataOutputSampleBufferDelegate, Sendable {
    /// How the stream is encoded.
    package struct Settings: Sendable, Equatable {
        /// Scale frames to fit within this size (aspect kept); nil: the frame's own size.
        package var maximumSize: CaptureDevice.Dimensions?
        /// JPEG quality, 1…100, of frames encoded here (a camera's own JPEG keeps its quality).
        package var quality: Int
        /// At most this many frames a second (measured on the frames' own clock).
        package var framesPerSecond: Double

        /// Creates the value from each of its properties.
        package init(maximumSize: CaptureDevice.Dimensions? = nil, quality: Int, framesPerSecond: Double) {
            self.maximumSize = maximumSize
            self.quality = quality
            self.framesPerSecond = framesPerSecond
        }
    }

    /// One streamed frame.
    package struct Frame: Sendable {
        /// Counts streamed frames (encoded or passed through) from 1.
        package var number: Int
        /// The multipart part: boundary line, headers, the JPEG and the closing CRLF.
        package var part: ByteBuffer
        package var width: Int
        package var height: Int
        /// Media time of the frame it was made from.
        package var time: MediaTime
        /// When the source released the frame, in seconds since 1970: its timestamp mapped to
        /// the wall clock by the earliest delivery seen (a paced file or synthetic scene releases
        /// frame i at its start plus i's timestamp; a camera's monotonic stamps map the same
        /// way). Sent as `X-Frame-Time` so a client can measure frame-to-viewer latency.
        package var capturedAt: Double

        /// Creates the value from each of its properties.
        package init(number: Int, part: ByteBuffer, width: Int, height: Int, time: MediaTime, capturedAt: Double) {
            self.number = number
            self.part = part
            self.width = width
            self.height = height
            self.time = time
            self.capturedAt = capturedAt
        }
    }

    /// The boundary between parts of `multipart/x-mixed-replace`.
    package static let boundary = "cvcamframe"
    package static var contentType: String { "multipart/x-mixed-replace; boundary=\(boundary)" }

    package let settings: Settings

    private struct State {
        package var viewers: [Int: AsyncStream<Frame>.Continuation] = [:]
        package var nextViewer = 0
        package var encoded = 0
        package var passedThrough = 0
        package var lastTime: Double?
        /// Wall-clock seconds minus media seconds, the least seen: maps a frame's timestamp to
        /// when the source released it (see `Frame.capturedAt`).
        package var epoch: Double?
        package var latest: Frame?
        package var finished = false
        package var pool: PixelBufferPool?
        package var thumbnail: (bytes: [UInt8], madeAt: Double)?
        package var thumbnailWaiters: [Int: CheckedContinuation<[UInt8]?, Never>] = [:]
        package var nextThumbnailWaiter = 0
        package var thumbnailPool: PixelBufferPool?
        package var thumbnailsMade = 0
    }
    private let state = Mutex(State())

    package init(settings: Settings) {
        self.settings = settings
    }

    /// Frames encoded here so far.
    package var encodedFrameCount: Int { state.withLock { $0.encoded } }
    /// Frames sent as the camera's own JPEG, without encoding, so far.
    package var passedThroughFrameCount: Int { state.withLock { $0.passedThrough } }
    /// Thumbnails made so far.
    package var thumbnailCount: Int { state.withLock { $0.thumbnailsMade } }
    /// Viewers watching now.
    package var viewerCount: Int { state.withLock { $0.viewers.count } }
    /// The newest frame, if any (for a still snapshot).
    package var latestFrame: Frame? { state.withLock { $0.latest } }

    /// A viewer's frames, newest first when it falls behind. Ends when the stream finishes or
    /// the reader stops listening (which removes the viewer).
    package func frames() -> AsyncStream<Frame> {
        let (stream, continuation) = AsyncStream.makeStream(of: Frame.self, bufferingPolicy: .bufferingNewest(1))
        let id: Int? = state.withLock {
            guard !$0.finished else { return nil }
            $0.nextViewer += 1
            $0.viewers[$0.nextViewer] = continuation
            return $0.nextViewer
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.viewers.removeValue(forKey: id) } }
        return stream
    }

    /// Ends every viewer's stream; later viewers get an empty one.
    package func finish() {
        let (viewers, waiters) = state.withLock { s in
            s.finished = true
            defer { s.thumbnailWaiters = [:] }
            return (Array(s.viewers.values), Array(s.thumbnailWaiters.values))
        }
        for v in viewers { v.finish() }
        for w in waiters { w.resume(returning: nil) }
    }

    /// The largest thumbnail; frames are scaled down to fit, aspect kept.
    package static let thumbnailSize = CaptureDevice.Dimensions(width: 320, height: 240)
    /// Seconds a thumbnail is handed out again before a new one is made.
    package static let thumbnailMaxAge = 2.0

    /// A small JPEG of a recent frame: the one made in the last `thumbnailMaxAge` seconds, or
    /// one of the next frame; nil when no frame comes within `timeout` seconds or the stream
    /// finished.
    package func thumbnail(timeout: Double = 5) async -> [UInt8]? {
        let now = Date().timeIntervalSince1970
        if let made = state.withLock({ $0.thumbnail }), now - made.madeAt < Self.thumbnailMaxAge { return made.bytes }
        return await withCheckedContinuation { (continuation: CheckedContinuation<[UInt8]?, Never>) in
            let id: Int? = state.withLock { s in
                guard !s.finished else { return nil }
                s.nextThumbnailWaiter += 1
                s.thumbnailWaiters[s.nextThumbnailWaiter] = continuation
                return s.nextThumbnailWaiter
            }
            guard let id else { return continuation.resume(returning: nil) }
            Task { [weak self] in
                try? await Task.sleep(for: .seconds(timeout))
                self?.state.withLock { $0.thumbnailWaiters.removeValue(forKey: id) }?.resume(returning: nil)
            }
        }
    }

    /// Makes the thumbnail from `sampleBuffer` when a page waits for one.
    private func answerThumbnailWaiters(_ sampleBuffer: SampleBuffer) {
        let waiters = state.withLock { s -> [CheckedContinuation<[UInt8]?, Never>] in
            defer { s.thumbnailWaiters = [:] }
            return Array(s.thumbnailWaiters.values)
        }
        guard !waiters.isEmpty else { return }
        var bytes: [UInt8]?
        do {
            let buffer = sampleBuffer.pixelBuffer
            var small = buffer
            if let size = Self.fitted(.init(width: buffer.width, height: buffer.height), in: Self.thumbnailSize) {
                let pool = state.withLock { s -> PixelBufferPool in
                    if let p = s.thumbnailPool, p.width == size.width, p.height == size.height, p.pixelFormat == buffer.pixelFormat { return p }
                    let p = PixelBufferPool(width: size.width, height: size.height, pixelFormat: buffer.pixelFormat, maximumIdleBuffers: 1)
                    s.thumbnailPool = p
                    return p
                }
                small = try pool.makeBuffer()
                try buffer.resize(into: small)
            }
            bytes = try ImageFile.encode(small, as: .jpeg(quality: 70))
        } catch {
            bytes = nil  // the waiters hear "no thumbnail"; the next request tries afresh
        }
        if let bytes {
            state.withLock {
                $0.thumbnail = (bytes, Date().timeIntervalSince1970)
                $0.thumbnailsMade += 1
            }
        }
        for w in waiters { w.resume(returning: bytes) }
    }

    package func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        stream(sampleBuffer)
    }

    /// Sends `sampleBuffer` to every viewer when one is due (the rate limit), passed through or
    /// encoded. Call on one serial queue (the video output's delegate queue).
    package func stream(_ sampleBuffer: SampleBuffer) {
        answerThumbnailWaiters(sampleBuffer)
        let t = sampleBuffer.presentationTimeStamp.seconds
        let now = Date().timeIntervalSince1970
        let (due, epoch) = state.withLock { s -> (Bool, Double) in
            let epoch = min(s.epoch ?? .infinity, now - t)
            s.epoch = epoch
            guard !s.viewers.isEmpty else { return (false, epoch) }
            // A small allowance so a 30 fps source asked for 30 fps is not halved by jitter.
            if let last = s.lastTime, t - last < 0.9 / settings.framesPerSecond, t >= last { return (false, epoch) }
            s.lastTime = t
            return (true, epoch)
        }
        guard due else { return }
        do {
            let frame = try jpeg(of: sampleBuffer)
            let capturedAt = epoch + t
            var part = ByteBuffer()
            part.writeString(
                "--\(Self.boundary)\r\nContent-Type: image/jpeg\r\nContent-Length: \(frame.bytes.count)\r\n"
                    + "X-Frame-Time: \(String(format: "%.6f", capturedAt))\r\n\r\n")
            switch frame.bytes {
            case .encoded(let bytes): part.writeBytes(bytes)
            case .camera(let data): part.writeBytes(data)
            }
            part.writeString("\r\n")
            let (latest, viewers) = state.withLock { s -> (Frame, [AsyncStream<Frame>.Continuation]) in
                switch frame.bytes {
                case .encoded: s.encoded += 1
                case .camera: s.passedThrough += 1
                }
                let made = Frame(
                    number: s.encoded + s.passedThrough, part: part, width: frame.width, height: frame.height,
                    time: sampleBuffer.presentationTimeStamp, capturedAt: capturedAt)
                s.latest = made
                return (made, Array(s.viewers.values))
            }
            for v in viewers { v.yield(latest) }
        } catch {
            // A frame that cannot be encoded is skipped; the next one is tried afresh.
        }
    }

    /// A frame's JPEG: the camera's own when the sample carries one and fits `maximumSize`,
    /// else the pixels (scaled to fit) encoded at `quality`.
    private func jpeg(of sample: SampleBuffer) throws(CaptureError) -> (bytes: JPEGBytes, width: Int, height: Int) {
        if let data = sample.jpegData,
            Self.fitted(.init(width: sample.width, height: sample.height), in: settings.maximumSize) == nil
        {
            return (.camera(data), sample.width, sample.height)
        }
        let frame = try scaled(sample.pixelBuffer)
        return (.encoded(try ImageFile.encode(frame, as: .jpeg(quality: settings.quality))), frame.width, frame.height)
    }

    /// Where a streamed JPEG came from.
    private enum JPEGBytes {
        /// Encoded here.
        case encoded([UInt8])
        /// The camera's own, passed through.
        case camera(Data)

        package var count: Int {
            switch self {
            case .encoded(let bytes): bytes.count
            case .camera(let data): data.count
            }
        }
    }

    /// `buffer` scaled to fit `maximumSize` (area-averaged), or itself when it already fits.
    private func scaled(_ buffer: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        guard let size = Self.fitted(CaptureDevice.Dimensions(width: buffer.width, height: buffer.height), in: settings.maximumSize)
        else { return buffer }
        let pool = state.withLock { s -> PixelBufferPool in
            if let p = s.pool, p.width == size.width, p.height == size.height, p.pixelFormat == buffer.pixelFormat { return p }
            let p = PixelBufferPool(width: size.width, height: size.height, pixelFormat: buffer.pixelFormat, maximumIdleBuffers: 2)
            s.pool = p
            return p
        }
        let destination = try pool.makeBuffer()
        try buffer.resize(into: destination)
        return destination
    }

    /// The size `frame` is scaled to so it fits in `box` with its aspect kept, or nil when it
    /// already fits (frames are never enlarged).
    package static func fitted(_ frame: CaptureDevice.Dimensions, in box: CaptureDevice.Dimensions?) -> CaptureDevice.Dimensions? {
        guard let box, frame.width > box.width || frame.height > box.height else { return nil }
        let scale = min(Double(box.width) / Double(frame.width), Double(box.height) / Double(frame.height))
        return .init(width: max(1, Int((Double(frame.width) * scale).rounded())), height: max(1, Int((Double(frame.height) * scale).rounded())))
    }
}
