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

    /// Creates a sample buffer; `jpegData` only when `pixelBuffer` shows exactly that JPEG.
    public init(
        pixelBuffer: PixelBuffer, presentationTimeStamp: MediaTime, duration: MediaTime,
        sequenceNumber: UInt64, inputID: CaptureInput.ID, jpegData: Data? = nil
    ) {
        self.pixelBuffer = pixelBuffer
        self.presentationTimeStamp = presentationTimeStamp
        self.duration = duration
        self.sequenceNumber = sequenceNumber
        self.inputID = inputID
        self.jpegData = jpegData
    }

    /// Width of the frame in pixels.
    public var width: Int { pixelBuffer.width }
    /// Height of the frame in pixels.
    public var height: Int { pixelBuffer.height }
    /// Layout of the pixels.
    public var pixelFormat: PixelFormat { pixelBuffer.pixelFormat }
}

/// Why a frame did not reach an output's delegate (AVFoundation's `kCMSampleBufferAttachmentKey_DroppedFrameReason`).
public enum FrameDropReason: String, Sendable, Hashable, CaseIterable {
    /// The consumer was still busy with an earlier frame; a newer frame replaced this one.
    case frameWasLate
    /// The bounded queue of a non-discarding output was full and the source could not wait.
    case outOfBuffers
    /// The source skipped frames (a gap in its sequence numbers, e.g. a camera that fell behind).
    case discontinuity
}
