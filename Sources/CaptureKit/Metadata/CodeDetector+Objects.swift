import Foundation

extension CodeDetector {
    /// Finds the codes in one frame (BGR, BGRA, gray, YUYV or NV12) as metadata objects:
    /// `detections(in:)` with `time` and `inputID` copied into each.
    ///
    /// Threading: as `detections(in:)` (thread-safe, serialised per detector).
    public func detect(
        in pixelBuffer: PixelBuffer, time: MediaTime = .zero, inputID: CaptureInput.ID = CaptureInput.ID(rawValue: 0)
    ) throws(CaptureError) -> [MetadataMachineReadableCodeObject] {
        try detections(in: pixelBuffer).map {
            MetadataMachineReadableCodeObject(
                type: $0.type, bounds: $0.bounds, stringValue: $0.stringValue, payload: $0.payload,
                corners: $0.corners, quality: $0.quality, time: time, inputID: inputID)
        }
    }
}
