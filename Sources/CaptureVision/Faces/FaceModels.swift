import Foundation

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
    /// the installed and system locations). YuNet is used unless it cannot be loaded (or
    /// `backend` is `.haar`); then the Haar cascade is used and a warning is logged once per
    /// process on `cvcam.faces`. Throws `faceModelUnavailable` when neither loads.
    public convenience init(
        configuration: Configuration = .standard, modelsDirectory: URL? = nil, backend: Backend = .yuNet
    ) throws(CaptureError) {
        let search = FaceModelSearch(explicit: modelsDirectory)
        // A place that holds neither file still names where the models were expected.
        let expected = search.candidates.first?.folder
        try self.init(
            configuration: configuration,
            yuNetModel: backend == .yuNet
                ? (search.locate(Self.yuNetModelName)?.file ?? expected?.appendingPathComponent(Self.yuNetModelName)) : nil,
            haarCascade: search.locate(Self.haarCascadeName)?.file
                ?? expected?.appendingPathComponent(Self.haarCascadeName),
            catFaceCascade: search.locate(Self.catFaceCascadeName)?.file)
    }

    /// The first folder on `FaceModelSearch`'s list holding either model file.
    public static func locateModels(explicit: URL? = nil) -> URL? {
        let search = FaceModelSearch(explicit: explicit)
        return (search.locate(yuNetModelName) ?? search.locate(haarCascadeName))?.file.deletingLastPathComponent()
    }
}
