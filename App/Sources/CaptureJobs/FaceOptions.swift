import ArgumentParser
import CaptureKit
import Foundation

/// How faces are looked for, shared by the commands that detect faces (faces, snap, watch).
package struct FaceOptions: ParsableArguments {
    package init() {}

    /// The face detector's trade of smallest face against CPU (`FaceDetector.Configuration`).
    package enum Detection: String, ExpressibleByArgument, CaseIterable {
        case realtime, standard, tiled

        package var configuration: FaceDetector.Configuration {
            switch self {
            case .realtime: .realTime
            case .standard: .standard
            case .tiled: .tiled
            }
        }
    }

    @Option(
        help: ArgumentHelp(
            "Face detection: realtime (frames scaled to 640 px: keeps up with 720p30 on two cores; faces from ~20 px wide at 720p, ~28 px at 1080p), standard (images up to 2048 px at their own size: faces from ~14 px; ~4x the CPU of realtime at 720p), tiled (frames up to 1280 px plus full-size tiles beyond: distant faces in 1080p). Default: standard for image files and folders, realtime for cameras, video and synthetic input.",
            valueName: "mode"))
    package var faceDetection: Detection?

    @Option(
        help: ArgumentHelp(
            "Seconds of video between searches of the whole frame for new faces; tracked faces are followed in every frame. 0: search every frame whole (more CPU).",
            valueName: "seconds"))
    package var faceScanInterval: Double = 0.1

    @Option(
        help: ArgumentHelp(
            "Folder holding the face models (as CVCAM_MODELS); when given, the only place looked in. Default: see `cvcam doctor`.",
            valueName: "folder"),
        completion: .directory)
    package var models: String?

    package func validate() throws {
        try OptionRange.check(faceScanInterval, OptionRange.seconds, "--face-scan-interval", unit: " seconds")
        if let models {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: models, isDirectory: &isFolder), isFolder.boolValue else {
                throw ValidationError("--models: \(TerminalText.escaped(models)) is not a folder")
            }
        }
    }

    /// `--models` reaches every face detector the run makes, including the metadata output's
    /// own, through the variable FaceModelSearch reads.
    package func applyModelsFolder() {
        if let models { setenv(FaceModelSearch.environmentVariable, models, 1) }
    }

    /// The detection mode asked for, or the default for the input: photos are searched at their
    /// own size, live and video frames at 640 px so detection keeps up.
    package func detection(for input: InputOptions) -> Detection {
        faceDetection ?? (["image", "folder"].contains(input.inputKind) ? .standard : .realtime)
    }

    /// A metadata output looking for faces inside the input's region of interest with this face
    /// detector (see `detection(for:)`) and scan interval. With `observer`, every analysed frame and exactly its faces also go
    /// there (`FaceObservingStage`). Throws `CLIError.noFaceModel` when no face model loads.
    /// With `latency`, a job with --stats-interval, each frame's detection is timed for its stats.
    package func faceOutput(
        for input: InputOptions, latency job: CaptureJob? = nil,
        observing observer: (@Sendable (SampleBuffer, [MetadataFaceObject]) -> Void)? = nil
    ) throws -> CaptureMetadataOutput {
        applyModelsFolder()
        let regionOfInterest = input.regionOfInterest
        let metadata: CaptureMetadataOutput
        if let job, job.statsInterval != nil {
            let recorder = LatencyRecorder()
            job.latency = recorder
            let timed = TimedFaceStage(DefaultFaceStage(detector: try detector(for: input)), recorder: recorder)
            metadata = CaptureMetadataOutput(
                faceStage: observer.map { FaceObservingStage(wrapping: timed, observer: $0) } ?? timed, codeStage: nil)
        } else {
            metadata =
                try observer.map {
                    CaptureMetadataOutput(
                        faceStage: FaceObservingStage(wrapping: DefaultFaceStage(detector: try detector(for: input)), observer: $0),
                        codeStage: nil)
                } ?? CaptureMetadataOutput(faceDetection: detection(for: input).configuration, allowsHaarCascadeFallback: true)
        }
        guard metadata.availableMetadataObjectTypes.contains(.face) else { throw CLIError.noFaceModel }
        try metadata.setMetadataObjectTypes([.face])
        metadata.rectOfInterest = regionOfInterest
        metadata.faceScanInterval = faceScanInterval
        return metadata
    }

    /// This face detector alone. Throws `CLIError.noFaceModel` when no face model loads. The CLI
    /// opts in to the Haar cascade when YuNet is missing: it warns once on stderr and goes on
    /// (`cvcam doctor` shows which model runs), where a library user gets an error.
    package func detector(for input: InputOptions) throws -> FaceDetector {
        applyModelsFolder()
        do {
            return try FaceDetector(configuration: detection(for: input).configuration, allowsHaarCascadeFallback: true)
        } catch {
            throw CLIError.noFaceModel
        }
    }
}
