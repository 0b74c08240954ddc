import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A file whose name is not UTF-8 (a Latin-1 `caf\xE9.png`) is listed, opened and written by its
/// own bytes (issue #17).
@Suite struct NonUTF8NameTests {
    /// The names in `folder` as the kernel stores them (`readdir`, no Foundation).
    func rawNames(_ folder: String) throws -> [[UInt8]] {
        let dir = try #require(FilePathBytes.withCString(folder) { opendir($0) })
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name != [0x2E] && name != [0x2E, 0x2E] { names.append(name) }
        }
        return names
    }

    static let cases: [[UInt8]] = [
        Array("plain.png".utf8), Array("café.png".utf8), Array("🙂 face.jpg".utf8),
        [0x63, 0x61, 0x66, 0xE9],  // Latin-1 "café"
        [0x80], [0xFF, 0xFE], [0xE2, 0x82], [0xC0, 0xAF],  // stray continuation, never-valid, cut, overlong
        [0xED, 0xA0, 0x80],  // an encoded surrogate
        [0xEF, 0x9F, 0xA9],  // valid UTF-8 for U+F7E9, a scalar that carries bytes
        [0x61, 0xEF, 0x9E, 0x80, 0xE9, 0x62],
    ]

    @Test(arguments: cases) func bytesRoundTrip(_ bytes: [UInt8]) {
        let text = FilePathBytes.string(bytes)
        #expect(FilePathBytes.bytes(text) == bytes)
        // Valid UTF-8 outside the carrying range reads as itself.
        if let utf8 = String(validating: bytes, as: UTF8.self),
           !utf8.unicodeScalars.contains(where: { FilePathBytes.carriedBytes.contains($0.value) }) {
            #expect(text == utf8)
        }
    }

    @Test func randomBytesRoundTrip() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 1...12, using: &rng)).map { _ in UInt8.random(in: 1...255, using: &rng) }
            #expect(FilePathBytes.bytes(FilePathBytes.string(bytes)) == bytes, "\(bytes)")
        }
    }

    @Test func imageFolderListsAndOpensANonUTF8Name() throws {
        let dir = try TemporaryDirectory()
        let name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".png".utf8)
        let path = dir.url.path + "/" + FilePathBytes.string(name)
        try AtomicFile.write(Data(contentsOf: URL(fileURLWithPath: Fixtures.faceImage("astronaut.png"))), to: URL(fileURLWithPath: path))
        #expect(try rawNames(dir.url.path) == [name], "the file is written under its own bytes")

        let source = try ImageFolderSource(path: dir.url.path, pacing: .asFastAsPossible)
        #expect(source.files.map(FilePathBytes.bytes) == [Array(dir.url.path.utf8) + [0x2F] + name])
        let expected = try ImageFolderSource.decode(Fixtures.faceImage("astronaut.png"))
        for input in [dir.url.path, source.files[0]] {
            let device = try CaptureDevice(imagesAtPath: input, pacing: .asFastAsPossible)
            let recorder = FrameRecorder()
            let (session, _) = try makeSession(device: device, recorder: recorder, discardsLate: false)
            try session.startRunning()
            #expect(session.waitUntilStopped(timeout: 30))
            #expect(session.lastRuntimeError == nil)
            #expect(recorder.frames.count == 1)
            #expect(recorder.frames.first?.width == expected.width && recorder.frames.first?.height == expected.height)
        }
    }

    @Test func videoFileWithANonUTF8NameIsWrittenAndRead() throws {
        let dir = try TemporaryDirectory()
        let name: [UInt8] = Array("clip".utf8) + [0xE9, 0xFF] + Array(".avi".utf8)
        let path = dir.url.path + "/" + FilePathBytes.string(name)
        #expect(try movingScene(width: 64, height: 48, frames: 3).writeClip(to: path) == 3)
        #expect(try rawNames(dir.url.path) == [name])
        let source = try VideoFileSource(path: path)
        #expect(source.declaredFrameCount == 3)
        #expect(source.formats[0].dimensions == .init(width: 64, height: 48))
    }
}
