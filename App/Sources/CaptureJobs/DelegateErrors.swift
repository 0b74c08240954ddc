import CaptureKit

extension CaptureError {
    /// An error a photo or recording delegate got (typed `Error?` as in AVFoundation) as the
    /// `CaptureError` CaptureKit always gives there; anything else is kept as a write failure
    /// naming it.
    package static func delegated(_ error: any Error) -> CaptureError {
        error as? CaptureError ?? CaptureError(.writeFailed, "\(error)")
    }
}
