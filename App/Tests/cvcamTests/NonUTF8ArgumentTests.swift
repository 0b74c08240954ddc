import CaptureKit
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
@testable import CVCamCommands

#if canImport(Glibc)
import Glibc
import AppTestSupport
#endif

/// File names that are not UTF-8 reach the built binary's `open()` with their own bytes, and are
/// printed escaped (issue #17).
@Suite struct NonUTF8ArgumentTests {
    /// Runs cvcam through `/bin/sh`, whose `printf '%b'` turns `\0351` in `arguments` into the
    /// byte 0xE9: `Process` takes arguments as Strings, which cannot hold such bytes.
    static func run(_ arguments: [String]) throws -> CLI.Result {
        let script = "exec \"$0\"" + arguments.indices.map { " \"$(printf '%b' \"$\($0 + 1)\")\"" }.joined()
        return try CLI.run(["-c", script, CLI.binary.path] + arguments, executable: URL(fileURLWithPath: "/bin/sh"))
    }

    /// A fresh folder holding Grace Hopper's photo as `caf\xE9.jpg`.
    static func folder() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-latin1-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let image = try Data(contentsOf: URL(fileURLWithPath: CLI.fixture("images/grace_hopper.jpg")))
        try AtomicFile.write(image, to: URL(fileURLWithPath: dir + "/" + FilePathBytes.string(Array("caf".utf8) + [0xE9] + Array(".jpg".utf8))))
        return dir
    }

    /// Whether `folder` holds a file named by exactly `name`'s bytes (`access`, no Foundation).
    static func exists(_ folder: String, _ name: [UInt8]) -> Bool {
        var path = Array(folder.utf8) + [0x2F] + name
        path.append(0)
        return path.withUnsafeBufferPointer { access(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), F_OK) } == 0
    }

    @Test func imageNamedInLatin1IsFoundAndItsFaceLogged() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for arguments in [["faces", "--input", dir + "/caf\\0351.jpg"], ["faces", "--input=" + dir + "/caf\\0351.jpg"]] {
            let result = try Self.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(result.stdout.contains("enter  face 1"), "\(result.stdout)")
        }
        // A folder holding it: listed by its bytes too.
        let folder = try Self.run(["faces", "--input", dir])
        #expect(folder.status == 0, "\(folder.stderr)")
        #expect(folder.stdout.contains("enter  face 1"))
    }

    @Test func missingLatin1NameIsPrintedWithTheByteEscaped() throws {
        let result = try Self.run(["faces", "--input", "/nonexistent/caf\\0351.jpg"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("/nonexistent/caf\\xe9.jpg"), "\(result.stderr)")
        #expect(!result.stderr.contains("\u{FFFD}"))
    }

    @Test func snapWritesALatin1NameRecordAndWatchRefuseOne() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let photo: [UInt8] = Array("photo".utf8) + [0xE9] + Array(".jpg".utf8)
        let snap = try Self.run(["snap", "--input", dir + "/caf\\0351.jpg", "-o", dir + "/photo\\0351.jpg"])
        #expect(snap.status == 0, "\(snap.stderr)")
        #expect(snap.stdout.contains("photo\\xe9.jpg"), "\(snap.stdout)")
        #expect(Self.exists(dir, photo), "the photo is written under the bytes asked for")
        // Refused up front, before capturing, like any existing name.
        let again = try Self.run(["snap", "--input", dir + "/caf\\0351.jpg", "-o", dir + "/photo\\0351.jpg"])
        #expect(again.status == 1)
        #expect(again.stderr.contains("photo\\xe9.jpg exists; choose another name or pass --overwrite."), "\(again.stderr)")

        let record = try Self.run(["record", "--input", dir + "/caf\\0351.jpg", "-o", dir + "/movie\\0351.avi"])
        #expect(record.status == 64, "\(record.stderr)")
        #expect(record.stderr.contains("movie\\xe9.avi' is not a UTF-8 file name"), "\(record.stderr)")
        #expect(!Self.exists(dir, Array("movie".utf8) + [0xE9] + Array(".avi".utf8)))

        let watch = try Self.run(["watch", "--input", dir + "/caf\\0351.jpg", "--dir", dir + "/shots\\0351"])
        #expect(watch.status == 64, "\(watch.stderr)")
        #expect(watch.stderr.contains("shots\\xe9' is not a UTF-8 folder name"), "\(watch.stderr)")
        #expect(!Self.exists(dir, Array("shots".utf8) + [0xE9]))
    }

    @Test func carriedBytesAreEscapedForTheTerminal() {
        #expect(TerminalText.escaped(FilePathBytes.string([0x63, 0xE9, 0x2E, 0x70])) == "c\\xe9.p")
        #expect(TerminalText.escaped("café") == "café")
    }
}
