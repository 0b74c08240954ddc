import CVBridge
import CaptureKitTesting
import Foundation
import Testing

@testable import CaptureVision

/// CaptureVision decodes JPEG and PNG without OpenCV's imgcodecs (issue #33: libjpeg-turbo and
/// libpng directly, `cvb_still_*`) and must give exactly what OpenCV gives: each fixture of
/// Tests/Fixtures/stills (Tools/make-still-fixtures: subsampling, progressive, gray, CMYK, every
/// EXIF orientation, EXIF OpenCV ignores, every PNG colour type and depth, interlacing, eXIf,
/// truncated files) is decoded both ways, from its file (`Imaging.read` against `cv::imread`)
/// and from memory into a buffer (`Imaging.decode` against `cv::imdecode`), as BGR and as gray,
/// and the results compared byte for byte, failures included.
@Suite struct StillDecodeTests {
    static let folder = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/stills")
    static let names: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
        .filter { $0.hasSuffix(".jpg") || $0.hasSuffix(".png") }.sorted()
    /// Every fixture's encoded size.
    static let width = 37, height = 23

    struct Decoded: Equatable, CustomStringConvertible {
        var width: Int
        var height: Int
        var bytes: [UInt8]
        init(_ buffer: PixelBuffer) {
            width = buffer.width
            height = buffer.height
            bytes = buffer.packedBytes()
        }
        var description: String { "\(width)x\(height), \(bytes.count) bytes" }
    }

    @Test func theFixturesAreThere() {
        #expect(Self.names.count >= 30, "run Tools/make-still-fixtures")
    }

    @Test(arguments: names, [PixelFormat.bgr, .gray])
    func aFileDecodesAsImreadDecodesIt(_ name: String, _ format: PixelFormat) throws {
        let path = Self.folder.appendingPathComponent(name).path
        var err = cvb_error()
        let opencv = cvb_image_read(path, format.rawValue, &err).map { Decoded(PixelBuffer(ownedMat: $0)) }
        let ours: Decoded?
        do {
            ours = Decoded(try Imaging.read(path, as: format, "reading \(name)"))
        } catch {
            ours = nil
            #expect(error.code == .unreadableImage, "\(name): \(error)")
        }
        #expect(ours == opencv, "\(name) as \(format): cvcam \(String(describing: ours)), OpenCV \(String(describing: opencv))")
    }

    @Test(arguments: names, [PixelFormat.bgr, .gray])
    func bytesDecodeIntoABufferAsImdecodeDecodesThem(_ name: String, _ format: PixelFormat) throws {
        let data = try Data(contentsOf: Self.folder.appendingPathComponent(name))
        // Both buffers start with the same stale contents: what a failed or partial decode leaves must match too.
        func stale() throws -> PixelBuffer {
            let buffer = try PixelBuffer(width: Self.width, height: Self.height, pixelFormat: format)
            for row in 0..<buffer.height {
                for x in 0..<buffer.bytesPerRow {
                    buffer.baseAddress.storeBytes(of: UInt8((row * 31 + x * 7) % 251), toByteOffset: row * buffer.bytesPerRow + x, as: UInt8.self)
                }
            }
            return buffer
        }
        let reference = try stale(), ours = try stale()
        var err = cvb_error()
        let status = data.withUnsafeBytes { bytes in
            reference.withBridgeImage {
                cvb_image_decode_into(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &$0, &err)
            }
        }
        var failed = false
        do { try Imaging.decode(data, into: ours, "decoding \(name)") } catch {
            failed = true
            #expect(error.code == .decodeFailed, "\(name): \(error)")
        }
        #expect(failed == (status != 0), "\(name) as \(format): cvcam \(failed ? "failed" : "decoded"), OpenCV \(err.text)")
        #expect(Decoded(ours) == Decoded(reference), "\(name) as \(format): the buffers differ")
    }

    /// The orientation fixtures really are rotated (so the comparisons above are not all upright).
    @Test func orientationsTurnTheImage() throws {
        let path = { (name: String) in Self.folder.appendingPathComponent(name).path }
        #expect(try Imaging.read(path("orientation6.jpg"), as: .bgr, "").width == Self.height)
        #expect(try Imaging.read(path("exif-orientation6.png"), as: .bgr, "").width == Self.height)
        // OpenCV reads the first APP1 only, and stops at a tag whose value lies outside the block.
        #expect(try Imaging.read(path("xmp-first-orientation6.jpg"), as: .bgr, "").width == Self.width)
        #expect(try Imaging.read(path("bad-make-orientation6.jpg"), as: .bgr, "").width == Self.width)
        let upright = try Imaging.read(path("orientation1.jpg"), as: .bgr, "")
        let mirrored = try Imaging.read(path("orientation2.jpg"), as: .bgr, "")
        #expect(upright.pixel(x: 0, y: 0) == mirrored.pixel(x: Self.width - 1, y: 0))
    }

    @Test func anImageOverTheLimitFailsBeforeDecoding() throws {
        let path = Self.folder.appendingPathComponent("rgb8.png").path
        let error = #expect(throws: CaptureError.self) {
            try Imaging.read(path, as: .bgr, maximumPixels: Self.width * Self.height - 1, "reading")
        }
        #expect(error?.message.contains("over the limit") == true, "\(String(describing: error))")
    }

    @Test func exifOrientationParsing() {
        // Little-endian TIFF, one IFD entry: orientation 8.
        let le: [UInt8] = [0x49, 0x49, 0x2A, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0]
        #expect(ExifOrientation(exif: le)?.value == 8)
        #expect(ExifOrientation(exif: le)?.transform?.degrees == 270)
        // No TIFF magic, a count past the end, an empty block: nothing.
        #expect(ExifOrientation(exif: Array(le.prefix(9))) == nil)
        #expect(ExifOrientation(exif: [0x49, 0x49, 0x2B, 0] + le.dropFirst(4)) == nil)
        #expect(ExifOrientation(exif: []) == nil)
        #expect(ExifOrientation(value: 1).transform == nil)
        #expect(ExifOrientation(value: 9).transform == nil)
    }
}
