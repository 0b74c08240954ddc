final class DefaultFaceStage { static func makeOrNil() -> (any FaceMetadataStage)? { nil } }
final class DefaultCodeStage { static func makeOrNil() -> (any CodeMetadataStage)? { nil } }
