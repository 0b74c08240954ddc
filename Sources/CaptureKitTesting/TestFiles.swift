import Foundation

/// A fresh temporary directory, removed with everything in it when the value goes away.
public final class TemporaryDirectory {
    /// The directory.
    public let url: URL

    /// Creates an empty directory under the system's temporary directory.
    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the directory.
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Image files built byte by byte, for inputs no encoder would write.
public enum TestImageFiles {
    /// A PNG signature, an IHDR chunk (with its CRC) declaring `width`×`height` 8-bit RGB, and
    /// IEND, with no pixel data: a header that claims any size for a few dozen bytes, to test
    /// the decoded-size limit.
    public static func pngHeaderOnly(width: UInt32, height: UInt32) -> [UInt8] {
        func be(_ v: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: v >> $0) } }
        let chunk = Array("IHDR".utf8) + be(width) + be(height) + [8, 2, 0, 0, 0]
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in chunk {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        }
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + be(13) + chunk + be(~crc)
            + be(0) + Array("IEND".utf8) + [0xAE, 0x42, 0x60, 0x82]
    }
}
