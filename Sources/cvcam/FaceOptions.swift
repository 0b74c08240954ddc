import ArgumentParser
import CaptureKit
import Foundation

/// How faces are looked for, shared by the commands that detect faces (faces, snap, watch).
struct FaceOptions: ParsableArguments {
    /// The face detector's trade of smallest face against CPU (`FaceDetector.Configuration`).
    enum Detection: String, ExpressibleByArgument, CaseIterable {
        case realtime, standard, tiled

        var configuration: FaceDetector.Configuration {
            switch self {
            case .realtime: .realTime
            case .standard: .standard
            case .tiled: .tiled
            }
        }
    }

    @Option(
        help: ArgumentHelp(
            "Face detection: realtime (frames scaled to 640 px: keeps up with 720p30 on two cores; faces from ~24 px at 720p, ~32 px at 1080p), standard (frames up to 1280 px at their own size: faces from ~12 px, ~4x the CPU at 720p), tiled (standard plus full-size tiles above 1280 px: distant faces in 1080p).",
            valueName: "mode"))
    var faceDetection: Detection = .realtime

    @Option(
        help: ArgumentHelp(
            "Seconds of video between searches of the whole frame for new faces; tracked faces are followed in every frame. 0: search every frame whole (more CPU).",
            valueName: "seconds"))
    var faceScanInterval: Double = 0.1

    func validate() throws {
        guard faceScanInterval >= 0, faceScanInterval.isFinite else {
            throw ValidationError("--face-scan-interval must be 0 or more seconds, not \(faceScanInterval)")
        }
    }

    /// A metadata output looking for faces inside `regionOfInterest` with this face detector
    /// and scan interval. With `observer`, every analysed frame and exactly its faces also go
    /// there (`FaceObservingStage`). Throws `CLIError.noFaceModel` when no face model loads.
    func faceOutput(
        regionOfInterest: CGRect, observing observer: (@Sendable (SampleBuffer, [MetadataFaceObject]) -> Void)? = nil
    ) throws -> CaptureMetadataOutput {
        let metadata =
            try observer.map {
                CaptureMetadataOutput(
                    faceStage: FaceObservingStage(wrapping: DefaultFaceStage(detector: try detector()), observer: $0),
                    codeStage: nil)
            } ?? CaptureMetadataOutput(faceDetection: faceDetection.configuration)
        guard metadata.availableMetadataObjectTypes.contains(.face) else { throw CLIError.noFaceModel }
        try metadata.setMetadataObjectTypes([.face])
        metadata.rectOfInterest = regionOfInterest
        metadata.faceScanInterval = faceScanInterval
        return metadata
    }

    /// This face detector alone. Throws `CLIError.noFaceModel` when no face model loads.
    func detector() throws -> FaceDetector {
        do {
            return try FaceDetector(configuration: faceDetection.configuration)
        } catch {
            throw CLIError.noFaceModel
        }
    }
}
