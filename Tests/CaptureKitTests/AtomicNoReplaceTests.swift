@testable import CaptureKit
@testable import CaptureVision
import Foundation
import Testing

/// `AtomicFile.write(replacing: false)` never replaces an existing file and leaves no temporary behind.
@Suite struct AtomicNoReplaceTests {
    @Test func anExistingFileIsKeptAndTheWriteFailsWithEEXIST() throws {
        let folder = try PhotoTestSupport.temporaryFolder("atomic-noreplace")
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("photo.jpg")
        try AtomicFile.write(Data("old".utf8), to: url, replacing: false)
        do {
            try AtomicFile.write(Data("new".utf8), to: url, replacing: false)
            Issue.record("the write should have been refused")
        } catch {
            #expect(error.code == .writeFailed && error.errno == EEXIST)
            #expect(error.message.contains("exists"))
        }
        #expect(try Data(contentsOf: url) == Data("old".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["photo.jpg"])
        try AtomicFile.write(Data("new".utf8), to: url)
        #expect(try Data(contentsOf: url) == Data("new".utf8))
    }
}
