import Foundation

// Face models: which files, where they are found, and loading them by name.
extension FaceDetector {
    /// File names looked up in the Models folder: YuNet-n 2023, the default model.
    public static let yuNetModelName = "face_detection_yunet_n_2023.onnx"
    /// YuNet 2022mar, what OpenCV 4.6's own `FaceDetectorYN` runs (shipped for comparisons).
    public static let yuNet2022ModelName = "face_detection_yunet_2022mar.onnx"
    /// File name of the Haar fallback.
    public static let haarCascadeName = "haarcascade_frontalface_alt2.xml"

    /// Loads the models from the package's Models folder, found in this order: `modelsDirectory`,
    /// the `CVCAM_MODELS` environment variable, `Models/` beside the executable or up to three
    /// folders above it, then the source tree this file was built from. YuNet is used unless it
    /// cannot be loaded (or `backend` is `.haar`); then the Haar cascade is used and a warning
    /// is logged once per process on `cvcam.faces`.
    /// Throws `faceModelUnavailable` when neither loads.
    public convenience init(
        configuration: Configuration = .standard, modelsDirectory: URL? = nil, backend: Backend = .yuNet
    ) throws(CaptureError) {
        let folder = Self.locateModels(explicit: modelsDirectory)
        try self.init(
            configuration: configuration,
            yuNetModel: backend == .yuNet ? folder?.appendingPathComponent(Self.yuNetModelName) : nil,
            haarCascade: folder?.appendingPathComponent(Self.haarCascadeName))
    }

    /// The Models folder: the first candidate holding either model file (see `init`).
    public static func locateModels(explicit: URL? = nil) -> URL? {
        var candidates: [URL] = []
        if let explicit { candidates.append(explicit) }
        if let env = ProcessInfo.processInfo.environment["CVCAM_MODELS"], !env.isEmpty {
            candidates.append(URL(fileURLWithPath: env))
        }
        var dir = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").resolvingSymlinksInPath()
            .deletingLastPathComponent()
        for _ in 0..<4 {
            candidates.append(dir.appendingPathComponent("Models"))
            dir = dir.deletingLastPathComponent()
        }
        // Sources/CaptureVision/Faces/FaceModels.swift → package root.
        var source = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { source = source.deletingLastPathComponent() }
        candidates.append(source.appendingPathComponent("Models"))
        let fm = FileManager.default
        return candidates.first { folder in
            fm.fileExists(atPath: folder.appendingPathComponent(yuNetModelName).path)
                || fm.fileExists(atPath: folder.appendingPathComponent(haarCascadeName).path)
        }
    }
}
