import Foundation

/// Receives the stages of one photo capture (`AVCapturePhotoCaptureDelegate`).
///
/// For every `capturePhoto(with:delegate:)` that did not throw, the output calls, in this order
/// and exactly once each unless noted: `willBeginCaptureFor`, `willCapturePhotoFor`,
/// `didCapturePhotoFor`, `didFinishProcessingPhoto` (once per expected photo), and
/// `didFinishCaptureFor` last. A capture that fails (unsupported settings, the session stopping,
/// an encoding or write failure) still gets the whole sequence; the error comes with the photos
/// it concerns and with `didFinishCaptureFor`.
///
/// All calls run on the output's serial delegate queue. Several captures may be in flight;
/// every call names its capture by `resolvedSettings.uniqueID`.
public protocol CapturePhotoCaptureDelegate: AnyObject, Sendable {
    /// The capture was accepted with these resolved settings.
    func photoOutput(_ output: CapturePhotoOutput, willBeginCaptureFor resolvedSettings: CaptureResolvedPhotoSettings)
    /// The first frame for the capture is about to be taken (the shutter moment).
    func photoOutput(_ output: CapturePhotoOutput, willCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings)
    /// Every frame for the capture has been taken.
    func photoOutput(_ output: CapturePhotoOutput, didCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings)
    /// One photo is encoded (and written, when the settings name a file), or failed. The error
    /// is typed `Error?` as in AVFoundation; it is always a `CaptureError` (`error as? CaptureError`
    /// gives its code, path and errno).
    func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?)
    /// The capture is over; `error` is the first error of the capture, if any (a `CaptureError`).
    func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings,
        error: (any Error)?)
}

extension CapturePhotoCaptureDelegate {
    public func photoOutput(_ output: CapturePhotoOutput, willBeginCaptureFor resolvedSettings: CaptureResolvedPhotoSettings) {}
    public func photoOutput(_ output: CapturePhotoOutput, willCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings) {}
    public func photoOutput(_ output: CapturePhotoOutput, didCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings) {}
    public func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings,
        error: (any Error)?
    ) {}
}

/// A frame source that can change its exposure bias between frames, which bracketed captures
/// need (V4L2 cameras with exposure controls; test doubles).
///
/// Threading: called on the input's capture thread, like `nextFrame`.
public protocol ExposureBracketingSource: FrameSource {
    /// Biases the source accepts, in EV.
    var exposureTargetBiasRange: ClosedRange<Float> { get }
    /// Sets the exposure bias in EV and returns how many frames still come at the old
    /// exposure (frames already in flight in the driver).
    func setExposureTargetBias(_ bias: Float) throws(CaptureError) -> Int
}
