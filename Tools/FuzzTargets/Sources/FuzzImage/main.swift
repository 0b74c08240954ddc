// Arbitrary bytes as an image file: the header check and decode (`ImageFolderSource.decode`:
// `cvb_still_read`, libjpeg-turbo and libpng, for JPEG and PNG, `cvb_image_read` otherwise), the
// in-place decode of V4L2 MJPEG frames (`Imaging.decode`, over `cvb_still_decode_into` and
// `cvb_image_decode_into`), then the code and face detectors on whatever decoded.
@testable import CaptureKit
@testable import CaptureVision
import FuzzSupport
import Foundation

// Built once: the detectors are the expensive part to create, and reuse is how sessions use them.
let codes = try! CodeDetector(
    metadataObjectTypes: Set(MetadataObjectType.machineReadableCodeTypes).intersection(CodeDetector.availableMetadataObjectTypes))
let faces = try! FaceDetector(
    yuNetModel: repositoryPath("Models/face_detection_yunet_n_2023.onnx"),
    haarCascade: repositoryPath("Models/haarcascade_frontalface_alt2.xml"))

runFuzzer { data, count in
    guard let start = data.map(UnsafeRawPointer.init) else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    // 4 megapixels keeps one input well under libFuzzer's 2 GB memory limit.
    guard let image = try? withTemporaryFile(bytes, suffix: ".img", { try ImageFolderSource.decode($0, maximumPixels: 4_000_000) })
    else { return 0 }
    // The same bytes decoded into a buffer of the size the full decode found, as the V4L2 path does.
    if let into = try? PixelBufferPool(width: image.width, height: image.height, pixelFormat: .bgr).makeBuffer() {
        try? Imaging.decode(bytes, into: into, "fuzz input")
    }
    _ = try? codes.detect(in: image)
    _ = try? faces.detect(in: image)
    return 0
}
