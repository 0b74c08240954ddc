import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

@testable import CaptureVision

/// `Imaging.decode` (`cvb_image_decode_into`) into a caller's buffer: a camera's damaged JPEG
/// must fail, never pass off the buffer's old contents as a frame (OpenCV's `imdecode` with a
/// destination leaves it untouched and non-empty when the bytes are no image).
@Suite struct ImagingDecodeTests {
    static let jpeg = try! Data(contentsOf: URL(fileURLWithPath: Fixtures.faceImage("grace_hopper.jpg")))

    /// A BGR buffer of the fixture's size, every byte 7.
    func stale() throws -> PixelBuffer {
        let source = try JPEGCameraSource(jpegAt: Fixtures.faceImage("grace_hopper.jpg"))
        let buffer = try PixelBuffer(
            width: source.pixelBuffer.width, height: source.pixelBuffer.height, pixelFormat: .bgr)
        for row in 0..<buffer.height {
            (buffer.baseAddress + row * buffer.bytesPerRow).initializeMemory(
                as: UInt8.self, repeating: 7, count: buffer.bytesPerRow)
        }
        return buffer
    }

    @Test func aWholeJPEGDecodesIntoTheBuffer() throws {
        let buffer = try stale()
        try Imaging.decode(Self.jpeg, into: buffer, "decoding")
        let source = try JPEGCameraSource(jpegAt: Fixtures.faceImage("grace_hopper.jpg"))
        #expect(buffer.packedBytes() == source.pixelBuffer.packedBytes())
    }

    @Test(arguments: ["not an image", "a JPEG cut inside its header", "an empty part"])
    func bytesThatDoNotDecodeFail(_ kind: String) throws {
        let bytes: Data
        switch kind {
        case "not an image": bytes = Data((0..<5000).map { UInt8(($0 * 37 + 3) % 256) })
        case "a JPEG cut inside its header": bytes = Self.jpeg.prefix(20)
        default: bytes = Data()
        }
        let buffer = try stale()
        let error = #expect(throws: CaptureError.self) { try Imaging.decode(bytes, into: buffer, "decoding") }
        #expect(error?.code == .decodeFailed, "\(kind)")
        #expect(buffer.packedBytes().allSatisfy { $0 == 7 }, "nothing written for \(kind)")
    }

    @Test func aJPEGOfAnotherSizeFailsWithoutWritingTheBuffer() throws {
        let buffer = try PixelBuffer(width: 64, height: 48, pixelFormat: .bgr)
        let error = #expect(throws: CaptureError.self) { try Imaging.decode(Self.jpeg, into: buffer, "decoding") }
        #expect(error?.message.contains("size differs") == true, "\(String(describing: error))")
    }
}
