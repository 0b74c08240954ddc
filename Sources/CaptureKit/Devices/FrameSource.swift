import Foundation

/// One frame as a backend produced it, before the session stamps it with its input.
public struct SourceFrame: Sendable {
    /// The pixels, in the format the source delivers.
    public var pixelBuffer: PixelBuffer
    /// When the frame was captured on the source's clock.
    public var presentationTimeStamp: MediaTime
    /// The source's frame counter; a jump of more than one means frames were skipped.
    public var sequenceNumber: UInt64
    /// The JPEG the source delivered this very frame as (a V4L2 or network camera streaming MJPEG), when
    /// `pixelBuffer` is its decode, untransformed; nil for every other source. It lets a consumer
    /// that wants JPEG send the camera's own bytes instead of encoding the pixels again.
    public var jpegData: Data?

    /// Creates a frame; `jpegData` only when `pixelBuffer` is the decode of exactly those bytes.
    public init(pixelBuffer: PixelBuffer, presentationTimeStamp: MediaTime, sequenceNumber: UInt64, jpegData: Data? = nil) {
        self.pixelBuffer = pixelBuffer
        self.presentationTimeStamp = presentationTimeStamp
        self.sequenceNumber = sequenceNumber
        self.jpegData = jpegData
    }
}

/// How a non-camera source is paced.
public enum FramePacing: String, Sendable, CaseIterable {
    /// Frames are released at the source's frame rate, as a camera would deliver them
    /// (live semantics: a slow consumer sees drops).
    case realTime
    /// Frames are released as fast as they can be decoded (batch processing: with
    /// `alwaysDiscardsLateVideoFrames == false` nothing is dropped, the source waits).
    case asFastAsPossible
}

/// The seam between CaptureKit and a backend that produces frames: V4L2 cameras, video
/// files, image folders, synthetic cameras, or a test double.
///
/// Threading: `formats`, `isLive`, `pacing` and `timestampClock` may be read from any thread. `open`,
/// `nextFrame` and `close` are called on the input's capture thread only, in that order,
/// possibly several times over the source's life (each start of a session opens it again).
public protocol FrameSource: AnyObject, Sendable {
    /// Every format the source can deliver.
    var formats: [CaptureDevice.Format] { get }
    /// True for cameras: frames arrive at the device's pace and cannot wait for a consumer.
    var isLive: Bool { get }
    /// For sources that are not live, how the session's frame clock releases their frames.
    var pacing: FramePacing { get }
    /// The clock `SourceFrame.presentationTimeStamp` is on: `.monotonic` when it maps to a wall
    /// time (`WallClock`), `.media` when it is only a position in the input.
    var timestampClock: FrameClock { get }
    /// Prepares streaming in `format` at one frame per `frameDuration`.
    func open(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError)
    /// The next frame, blocking until one is available; nil when the source has ended.
    /// A live source must return within about 200 ms when `isCancelled()` becomes true
    /// (return nil then).
    func nextFrame(isCancelled: @Sendable () -> Bool) throws(CaptureError) -> SourceFrame?
    /// Stops streaming and releases what `open` acquired. Safe to call more than once.
    func close()
    /// What the device offers beyond frames (controls, the last negotiation, frames in flight),
    /// or nil for sources that are only frames (files, folders, synthetic cameras).
    var capabilities: (any DeviceCapabilities)? { get }
}

extension FrameSource {
    public var capabilities: (any DeviceCapabilities)? { nil }
    /// Media time unless a source says otherwise: only a source that reads a real clock may.
    public var timestampClock: FrameClock { .media }
}

/// What a camera backend offers beyond frames. Devices, outputs and the CLI ask a source for
/// this instead of downcasting it to a backend type, so a second backend (or a test double)
/// plugs in by adopting it.
///
/// Threading: every member may be used from any thread.
public protocol DeviceCapabilities: AnyObject, Sendable {
    /// The device node frames come from (e.g. /dev/video0).
    var devicePath: String { get }
    /// The format the last `open` asked for and the one the driver granted; nil before it.
    var lastNegotiation: V4L2Negotiation? { get }
    /// How many frames the device may have captured and not yet delivered (its driver
    /// buffers): a setting changed now shows in the frames after these.
    var framesInFlight: Int { get }
    /// The exposure mode last chosen through `CaptureDevice.exposureMode`, if any.
    var chosenExposureMode: CaptureDevice.ExposureMode? { get set }
    /// Runs `body` with a descriptor for control ioctls: the streaming one while streaming,
    /// else one opened for the call.
    func withControlDescriptor<T>(_ body: (V4L2Descriptor) throws(CaptureError) -> T) throws(CaptureError) -> T
}
