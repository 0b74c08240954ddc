import CVBridge
import Foundation
import Testing

@testable import CaptureKit
@testable import CaptureVision

/// `ImageHeader` reads the size of every format OpenCV decodes here before anything is
/// decoded, and a file whose size it cannot read is not decoded at all.
@Suite struct ImageHeaderTests {
    static let folder: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-headers-\(UUID())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    func write(_ bytes: [UInt8], _ name: String) throws -> String {
        let path = Self.folder.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func size(_ path: String) -> (width: Int, height: Int)? {
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        return ImageHeader.dimensions(fd)
    }

    /// Files written by OpenCV's own encoders: the header gives the encoded size, and the file decodes.
    @Test(arguments: [".png", ".jpg", ".bmp", ".webp", ".ppm", ".pfm", ".tiff", ".jp2", ".hdr", ".ras"])
    func encodedFilesHaveTheirSizeReadAndDecode(_ ext: String) throws {
        let image = try PixelBuffer(width: 100, height: 80, pixelFormat: .bgr)
        for y in 0..<80 { for x in 0..<300 { (image.baseAddress + y * image.bytesPerRow + x).storeBytes(of: UInt8((x * 7 + y * 3) & 0xFF), as: UInt8.self) } }
        var err = cvb_error()
        let mat = try #require(image.withBridgeImage { cvb_image_encode(&$0, ext, nil, 0, &err) }, "\(ext): \(err.text)")
        defer { cvb_mat_release(mat) }
        let bytes = Array(UnsafeBufferPointer(start: cvb_mat_image(mat).data!, count: cvb_mat_byte_length(mat)))
        let path = try write(bytes, "encoded\(ext)")
        let read = try #require(size(path), "\(ext): no size read")
        #expect(read == (100, 80), "\(ext)")
        let decoded = try ImageFolderSource.decode(path)
        #expect(decoded.width == 100 && decoded.height == 80)
    }

    /// Formats OpenCV cannot encode from 8-bit frames here, from hand-made headers.
    @Test func openEXRAndBigTIFFHeadersGiveTheirSize() throws {
        // OpenEXR: magic, version, then attributes (name, type, size, value) up to an empty name.
        func le(_ v: Int32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
        var exr: [UInt8] = [0x76, 0x2F, 0x31, 0x01, 2, 0, 0, 0]
        exr += Array("compression\0compression\0".utf8) + le(1) + [0]
        exr += Array("dataWindow\0box2i\0".utf8) + le(16) + le(-2) + le(5) + le(1277) + le(724)
        exr += [0]
        #expect(size(try write(exr, "hand.exr")).map { [$0.width, $0.height] } == [1280, 720])
        // BigTIFF (magic 43): 8-byte offsets and counts, 20-byte entries; LONG8 width, SHORT height.
        var big: [UInt8] = Array("II".utf8) + [43, 0, 8, 0, 0, 0] + [16, 0, 0, 0, 0, 0, 0, 0]
        big += [2, 0, 0, 0, 0, 0, 0, 0]
        big += [0, 1, 16, 0, 1, 0, 0, 0, 0, 0, 0, 0] + [0x40, 0x9C, 0, 0, 0, 0, 0, 0]  // 256: 40000
        big += [1, 1, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0] + [0x10, 0x27, 0, 0, 0, 0, 0, 0]  // 257: 10000
        #expect(size(try write(big, "hand.tif")).map { [$0.width, $0.height] } == [40000, 10000])
        // Big-endian classic TIFF with LONG sizes.
        var mm: [UInt8] = Array("MM".utf8) + [0, 42, 0, 0, 0, 8, 0, 2]
        mm += [1, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0x0A, 0x00]  // 256: 2560
        mm += [1, 1, 0, 3, 0, 0, 0, 1, 0x05, 0xA0, 0, 0]  // 257: 1440 (SHORT)
        #expect(size(try write(mm, "hand-mm.tif")).map { [$0.width, $0.height] } == [2560, 1440])
    }

    /// A format whose header gives no size (here, one cvcam does not know) is refused before
    /// OpenCV sees it, with the formats it could have been.
    @Test func aFileWithoutAReadableSizeIsNotDecoded() throws {
        let path = try write(Array(repeating: 0x20, count: 128) + Array("DICM".utf8) + Array(repeating: 0, count: 512), "scan.dcm")
        #expect(size(path).map { [$0.width, $0.height] } == nil)
        do {
            _ = try ImageFolderSource.decode(path)
            Issue.record("decoded a file whose size was never checked")
        } catch {
            #expect(error.code == .unreadableImage)
            #expect(error.message.contains("TIFF") && error.message.contains("size"), "\(error.message)")
        }
    }
}
