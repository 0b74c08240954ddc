import Foundation

/// One video frame with its timing, like Core Media's `CMSampleBuffer`.
///
/// Value type over a shared, read-only `PixelBuffer`; thread-safe to pass anywhere.
public struct SampleBuffer: Sendable {
    /// The pixels.
    public let pixelBuffer: PixelBuffer
    /// When the frame was captured, on the input's clock: the container's timestamp for files,
    /// `index × frame duration` for image folders and synthetic cameras, the driver's monotonic
    /// timestamp for cameras.
    public let presentationTimeStamp: MediaTime
    /// How long the frame is shown (the input's frame duration).
    public let duration: MediaTime
    /// The input's frame counter: 0 for the first frame, +1 per frame produced. A gap means the
    /// source itself skipped frames.
    public let sequenceNumber: UInt64
    /// The input that produced the frame.
    public let inputID: CaptureInput.ID
    /// The source's own JPEG of this frame (a V4L2 or network camera streaming MJPEG), like a
    /// `CMSampleBuffer` with a data buffer and a 'jpeg' format description: present only when
    /// the source delivered this very frame as JPEG and `pixelBuffer` is its decode,
    /// untransformed. A stage that changes the picture's geometry (rotation, mirroring, scaling,
    /// cropping) drops it, so it never disagrees with the pixels; a pixel-format conversion keeps
    /// it. nil for files, image folders, synthetic sources and H.264 streams.
    public let jpegData: Data?
    /// Why this frame was dropped, in a buffer handed to `captureOutput(_:didDrop:from:)`
    /// (AVFoundation's `kCMSampleBufferAttachmentKey_DroppedFrameReason` attachment); nil in
    /// every delivered frame.
    public let droppedFrameReason: FrameDropReason?

    /// Creates a sample buffer; `jpegData` only when `pixelBuffer` shows exactly that JPEG.
    public init(
        pixelBuffer: PixelBuffer, presentationTimeStamp: MediaTime, duration: MediaTime,
        sequenceNumber: UInt64, inputID: CaptureInput.ID, jpegData: Data? = nil,
        droppedFrameReason: FrameDropReason? = nil
    ) {
        self.pixelBuffer = pixelBuffer
        self.presentationTimeStamp = presentationTimeStamp
        self.duration = duration
        self.sequenceNumber = sequenceNumber
        self.inputID = inputID
        self.jpegData = jpegData
        self.droppedFrameReason = droppedFrameReason
    }

    /// This frame, marked as dropped for `reason`.
    func dropped(_ reason: FrameDropReason) -> SampleBuffer {
        SampleBuffer(
            pixelBuffer: pixelBuffer, presentationTimeStamp: presentationTimeStamp, duration: duration,
            sequenceNumber: sequenceNumber, inputID: inputID, jpegData: jpegData, droppedFrameReason: reason)
    }

    /// The frames a source skipped before `next` (`count` of them, never produced), each as a
    /// buffer without pixels (`pixelBuffer` is 0×0, as AVFoundation's dropped buffers hold no
    /// image), its sequence number and its time estimated from `next`'s, marked `discontinuity`.
    static func skipped(_ count: Int, before next: SampleBuffer) -> [SampleBuffer] {
        (0..<max(0, count)).map { i in
            let back = Int64(count - i)
            let time = MediaTime(
                seconds: max(0, next.presentationTimeStamp.seconds - Double(back) * next.duration.seconds),
                preferredTimescale: max(next.presentationTimeStamp.timescale, next.duration.timescale))
            return SampleBuffer(
                pixelBuffer: PixelBuffer.noPixels(next.pixelFormat), presentationTimeStamp: time, duration: next.duration,
                sequenceNumber: next.sequenceNumber >= UInt64(back) ? next.sequenceNumber - UInt64(back) : 0,
                inputID: next.inputID, droppedFrameReason: .discontinuity)
        }
    }

    /// Width of the frame in pixels.
    public var width: Int { pixelBuffer.width }
    /// Height of the frame in pixels.
    public var height: Int { pixelBuffer.height }
    /// Layout of the pixels.
    public var pixelFormat: PixelFormat { pixelBuffer.pixelFormat }
}

/// Why a frame did not reach an output's delegate (AVFoundation's
/// `kCMSampleBufferAttachmentKey_DroppedFrameReason`): `SampleBuffer.droppedFrameReason` of the
/// buffer handed to `captureOutput(_:didDrop:from:)`.
public enum FrameDropReason: String, Sendable, Hashable, CaseIterable {
    /// The consumer was still busy with an earlier frame; a newer frame replaced this one.
    case frameWasLate
    /// The bounded queue of a non-discarding output was full and the source could not wait.
    case outOfBuffers
    /// The source skipped frames (a gap in its sequence numbers, e.g. a camera that fell behind).
    case discontinuity
}

extension PixelBuffer {
    /// A 0×0 buffer of `format` for frames that have no pixels (a frame the source skipped);
    /// reading it reads nothing.
    static func noPixels(_ format: PixelFormat) -> PixelBuffer {
        PixelBuffer(wrapping: noPixelsMemory, width: 0, height: 0, bytesPerRow: 0, pixelFormat: format, release: {})
    }
}

/// The one byte every 0×0 buffer points at (a buffer needs an address); never written.
private nonisolated(unsafe) let noPixelsMemory = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 16)
