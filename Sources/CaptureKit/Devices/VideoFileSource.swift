import Foundation
import Synchronization

/// Frames from a video file (MP4, MKV, AVI, …) through OpenCV's FFmpeg backend
/// (`cv::VideoCapture` via CaptureVision's `VideoReader`), decoded to BGR.
///
/// Timestamps come from the container (`CAP_PROP_POS_MSEC`); where the container reports 0
/// after the first frame, `index × frame duration` is used instead. Times count from the
/// stream's start, not the file's clock: a file whose clock starts at 1 h plays from 0.
/// A file that ends well before the duration (or, without one, the frame count) its container
/// declares ends with `CaptureError.Code.truncatedVideo`. The header's numbers are range-checked
/// once, by `VideoContainerInfo`.
///
/// Threading: `open`/`nextFrame`/`close` on the capture thread only (FrameSource's rule).
public final class VideoFileSource: FrameSource, @unchecked Sendable {
    // @unchecked: `reader`, `pool` and the counters are touched only by the capture thread
    // between open and close; everything else is immutable.

    /// The file being read.
    public let path: String
    /// What the container declares (0 when it declares none, or an absurd number).
    public let declaredFrameCount: Int
    /// The container's frame rate (30 when it declares none, or an absurd rate).
    public let frameRate: Double
    public let formats: [CaptureDevice.Format]
    public let isLive = false
    public let pacing: FramePacing

    private let info: VideoContainerInfo
    private var reader: VideoReader?
    private var pool: PixelBufferPool?
    private var framesRead: Int64 = 0
    private var firstPTS = MediaTime.zero
    private var lastPTS = MediaTime.zero
    private var frameDuration = MediaTime(value: 1, timescale: 30)

    /// Opens the file once to read its size, rate and frame count.
    ///
    /// - Throws: `.fileNotFound` when nothing is at `path`; `.permissionDenied` when it cannot be
    ///   read; `.cannotOpenVideo` when it is not a regular file (a FIFO, a socket), or when the file
    ///   is not a video OpenCV's FFmpeg backend can decode (a text file named `.mp4`, a
    ///   truncated MP4 without its index, a directory, no usable frame size); `.imageTooLarge`
    ///   when its frames would have more than `ImageFolderSource.maximumPixels` pixels.
    public init(path: String, pacing: FramePacing = .realTime) throws(CaptureError) {
        self.path = path
        self.pacing = pacing
        guard !InputFile.isFolder(try InputFile.status(path, code: .cannotOpenVideo)) else {
            throw CaptureError(
                .cannotOpenVideo, "\(path) is a folder, not a video file: open it as an image folder instead",
                path: path)
        }
        // FFmpeg opens the file twice (probe, then read): a FIFO would block the second open.
        try InputFile.withRegularFile(path, kind: "a video", code: .cannotOpenVideo) { _ in }
        let probe = try VideoReader(
            path: path, .cannotOpenVideo,
            "\(path) is not a video OpenCV can decode (use MP4, MKV or AVI, and check the file is complete)")
        probe.close()
        let checked = try VideoContainerInfo(probe.info, path: path)
        self.info = checked
        let fps = checked.framesPerSecond ?? 30
        frameRate = fps
        declaredFrameCount = checked.declaredFrames ?? checked.frameCount ?? 0
        let codec = fourCCText(checked.fourCC)
        formats = [
            CaptureDevice.Format(
                mediaSubType: codec, pixelFormat: .bgr,
                dimensions: .init(width: checked.width, height: checked.height),
                videoSupportedFrameRateRanges: [.init(framesPerSecond: fps)])
        ]
    }

    deinit { close() }

    public func open(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) {
        close()
        let reader = try VideoReader(path: path, .cannotOpenVideo, "cannot reopen \(path)")
        // The file may have been replaced since init: its size is checked again.
        let reopened = try VideoContainerInfo(reader.info, path: path)
        self.reader = reader
        self.frameDuration = MediaTime.frameDuration(framesPerSecond: frameRate)
        pool = PixelBufferPool(width: reopened.width, height: reopened.height, pixelFormat: .bgr)
        framesRead = 0
        lastPTS = .zero
    }

    public func nextFrame(isCancelled: @Sendable () -> Bool) throws(CaptureError) -> SourceFrame? {
        guard let reader, let pool else { return nil }
        let buffer = try pool.makeBuffer()
        switch try reader.read(into: buffer, "decoding frame \(framesRead) of \(path) failed") {
        case .frame(let positionMs):
            let n = framesRead
            framesRead += 1
            let pts = timestamp(containerSeconds: positionMs / 1000, frame: n)
            lastPTS = pts
            return SourceFrame(pixelBuffer: buffer, presentationTimeStamp: pts, sequenceNumber: UInt64(n))
        case .end:
            let last = framesRead > 0 ? lastPTS.seconds : 0
            if let declared = info.unreachedEnd(
                lastFrame: last, framesRead: Int(framesRead), frameDuration: frameDuration.seconds)
            {
                throw CaptureError(
                    .truncatedVideo,
                    "\(path) ended after \(framesRead) frames (\(last) s) though its container declares \(declared): the file is truncated or corrupt",
                    path: path)
            }
            return nil
        }
    }

    /// The frame's time: the container's, unless it reported none (0), or it lies within 1.5
    /// frame durations of the constant-rate schedule (FFmpeg's threaded decoders sometimes report
    /// a neighbouring frame's time, measured on MJPEG clips at end of stream), where the schedule
    /// is used. Larger departures (variable frame rate, real gaps) keep the container's time.
    /// Without a believable declared rate there is no schedule to snap to: the container's time
    /// is kept. Always strictly increasing.
    private func timestamp(containerSeconds: Double, frame n: Int64) -> MediaTime {
        if n == 0 {
            firstPTS = MediaTime(seconds: max(0, containerSeconds))
            return firstPTS
        }
        let scheduled = MediaTime(seconds: firstPTS.seconds + frameDuration.seconds * Double(n))
        var t = containerSeconds > 0 ? MediaTime(seconds: containerSeconds) : scheduled
        if info.framesPerSecond != nil && abs(t.seconds - scheduled.seconds) < 1.5 * frameDuration.seconds { t = scheduled }
        if t <= lastPTS { t = MediaTime(seconds: lastPTS.seconds + frameDuration.seconds) }
        return t
    }

    public func close() {
        reader?.close()
        reader = nil
    }
}
