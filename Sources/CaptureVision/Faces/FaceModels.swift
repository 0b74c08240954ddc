import Foundation

/// Which face model a detector runs, and from which file: what `FaceDetector.model` and
/// `CaptureMetadataOutput.faceDetectorModel` report, so that a weaker detector is never a
/// surprise.
///
/// Value type; thread-safe.
public struct FaceDetectorModel: Sendable, Hashable, CustomStringConvertible {
    /// YuNet (landmarks, roll and yaw) or the Haar cascade (boxes only).
    public var backend: FaceDetector.Backend
    /// The model file that was loaded.
    public var file: URL

    /// Describes a model.
    public init(backend: FaceDetector.Backend, file: URL) {
        self.backend = backend
        self.file = file
    }

    /// Whether this is YuNet, which gives landmarks, roll and yaw.
    public var isYuNet: Bool { backend == .yuNet }

    /// "YuNet face_detection_yunet_n_2023.onnx (/path)" or "Haar cascade … (/path)".
    public var description: String {
        "\(backend == .yuNet ? "YuNet" : "Haar cascade") \(file.lastPathComponent) (\(file.path))"
    }
}

// Face models: which files, where they are found, and loading them by name.
extension FaceDetector {
    /// File names looked up in the Models folder: YuNet-n 2023, the default model.
    public static let yuNetModelName = "face_detection_yunet_n_2023.onnx"
    /// YuNet 2022mar, what OpenCV 4.6's own `FaceDetectorYN` runs (shipped for comparisons).
    public static let yuNet2022ModelName = "face_detection_yunet_2022mar.onnx"
    /// File name of the Haar fallback.
    public static let haarCascadeName = "haarcascade_frontalface_alt2.xml"
    /// File name of OpenCV's cat-face cascade (`Configuration.catFaceVeto`).
    public static let catFaceCascadeName = "haarcascade_frontalcatface_extended.xml"

    /// Loads the models found by `FaceModelSearch` (`modelsDirectory`, else `CVCAM_MODELS`, else
    /// the installed tree, the library's resources and the system locations).
    ///
    /// YuNet runs unless `backend` is `.haar`. When YuNet cannot be loaded, the Haar cascade runs
    /// only if `allowsHaarCascadeFallback` is true (a warning is then logged once per process on
    /// `cvcam.faces`); otherwise this throws, so that an app never gets the weaker detector (no
    /// landmarks, roll or yaw, lower recall) without choosing it. `model` says what runs.
    ///
    /// - Throws: `faceModelUnavailable`, naming every place searched, when no allowed model loads.
    public convenience init(
        configuration: Configuration = .standard, modelsDirectory: URL? = nil, backend: Backend = .yuNet,
        allowsHaarCascadeFallback: Bool = false
    ) throws(CaptureError) {
        let search = FaceModelSearch(explicit: modelsDirectory)
        let yuNet = search.locate(Self.yuNetModelName)
        let haar = search.locate(Self.haarCascadeName)
        if backend == .yuNet, yuNet == nil, !allowsHaarCascadeFallback {
            throw Self.yuNetNotFound(search)
        }
        // A place that holds neither file still names where the models were expected.
        let expected = search.candidates.first?.folder
        try self.init(
            configuration: configuration,
            yuNetModel: backend == .yuNet
                ? (yuNet?.file ?? expected?.appendingPathComponent(Self.yuNetModelName)) : nil,
            haarCascade: backend == .haar || allowsHaarCascadeFallback
                ? (haar?.file ?? expected?.appendingPathComponent(Self.haarCascadeName)) : nil,
            catFaceCascade: search.locate(Self.catFaceCascadeName)?.file)
    }

    /// The model this detector runs.
    public var model: FaceDetectorModel {
        if backend == .yuNet, let yuNetModelPath {
            return FaceDetectorModel(backend: .yuNet, file: URL(fileURLWithPath: yuNetModelPath))
        }
        return FaceDetectorModel(backend: .haar, file: URL(fileURLWithPath: haarCascadePath ?? ""))
    }

    /// The first folder on `FaceModelSearch`'s list holding either model file.
    public static func locateModels(explicit: URL? = nil) -> URL? {
        let search = FaceModelSearch(explicit: explicit)
        return (search.locate(yuNetModelName) ?? search.locate(haarCascadeName))?.file.deletingLastPathComponent()
    }

    /// Whether `search` finds a model a detector with this policy may load: YuNet, or the Haar
    /// cascade when `allowsHaarCascadeFallback`. Touches the file system only.
    public static func hasUsableModel(in search: FaceModelSearch, allowsHaarCascadeFallback: Bool) -> Bool {
        search.locate(yuNetModelName) != nil || (allowsHaarCascadeFallback && search.locate(haarCascadeName) != nil)
    }

    /// The error for a search that found no YuNet, with every place it looked and both ways out.
    static func yuNetNotFound(_ search: FaceModelSearch) -> CaptureError {
        let places = search.candidates.map {
            "\($0.folder.appendingPathComponent(yuNetModelName).path) (\($0.place == .explicit ? "the folder given" : $0.place.rawValue))"
        }.joined(separator: ", ")
        return CaptureError(
            .faceModelUnavailable,
            "no YuNet face model; looked for \(places.isEmpty ? "it nowhere" : places). CaptureKit ships it as a resource that `swift build` copies beside the executable (*\(FaceModelSearch.resourceBundleSuffix)/Models): keep that folder with the binary, install the models in /usr/share/cvcam/models, or set \(FaceModelSearch.environmentVariable); to run the weaker Haar cascade instead (no landmarks, roll or yaw), opt in with allowsHaarCascadeFallback",
            path: search.candidates.first?.folder.appendingPathComponent(yuNetModelName).path)
    }
}
