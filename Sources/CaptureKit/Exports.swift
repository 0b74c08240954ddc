// CaptureKit's public API includes the vision layer's (PixelBuffer, CaptureError, FaceDetector,
// CodeDetector, …): an app imports CaptureKit alone and sees them as before the split.
@_exported import CaptureVision
