import CaptureKit
import Foundation
import Testing

@testable import CaptureJobs
import AppTestSupport

/// `watch` and `record --dir` with `--max-age`, `--max-bytes` and `--min-free-space`: the built
/// binary removes its camera's old files from its folder, prints each removal as a `retention`
/// event, and leaves everything else alone.
@Suite struct RetentionCLITests {
    static let face = CLI.fixture("images/astronaut.png")
    /// The name `watch` and `record` give the synthetic 640x480 camera's files.
    static let prefix = SnapshotStore.sanitizedName("Synthetic camera \(CaptureDevice.Dimensions(width: 640, height: 480))")

    func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-retcli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func plant(_ folder: URL, _ name: String, days: Double) throws {
        let url = folder.appendingPathComponent(name)
        try Data(repeating: 7, count: 4096).write(to: url)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-days * 86_400)], ofItemAtPath: url.path)
    }

    func events(_ result: CLI.Result) -> [[String: Any]] {
        result.lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    @Test func watchRemovesItsCamerasOldSnapshotsAndNothingElse() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let old = ["\(Self.prefix)-20250101-101010.000-face1.jpg", "\(Self.prefix)-20250101-101010.000-face1-pre-01.jpg"]
        let foreign = ["holiday.jpg", "door-20250101-101010.000-face1.jpg", "\(Self.prefix)-20250101-101010.000-face1.jpg.bak"]
        for name in old + foreign { try plant(dir, name, days: 40) }
        let result = try CLI.run([
            "watch", "--dir", dir.path, "--input", "synthetic:size=640x480,fps=10,frames=20,image=\(Self.face)", "--max-age", "30d",
            "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let retention = events(result).filter { $0["type"] as? String == "retention" }
        #expect(retention.count == 1, "\(result.stdout)")
        #expect(retention.first?["kind"] as? String == "snapshots" && retention.first?["reason"] as? String == "maxAge")
        #expect(retention.first?["count"] as? Int == 2 && retention.first?["bytes"] as? Int == 8192)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: dir.path))
        #expect(left.isDisjoint(with: old))
        #expect(left.isSuperset(of: foreign))
    }

    @Test func retentionOptionsAreChecked() throws {
        for (arguments, fragment) in [
            (["watch", "--dir", "/tmp/x", "--input", "synthetic:", "--max-age", "forever"], "--max-age"),
            (["watch", "--dir", "/tmp/x", "--input", "synthetic:", "--max-bytes", "0"], "--max-bytes"),
            (["watch", "--dir", "/tmp/x", "--input", "synthetic:", "--min-free-space", "lots"], "--min-free-space"),
            (["record", "-o", "/tmp/x.avi", "--input", "synthetic:", "--max-age", "1d"], "--dir"),
        ] {
            let result = try CLI.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(fragment), "\(arguments): \(result.stderr)")
        }
    }

    @Test func recordDirRemovesItsOldRecordingsAndKeepsTheNewOne() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let old = ["\(Self.prefix)-20250101-101010.000.avi", "\(Self.prefix)-20250102-101010.000.avi"]
        for name in old { try plant(dir, name, days: 300) }
        try plant(dir, "other-20250101-101010.000.avi", days: 300)
        let result = try CLI.run([
            "record", "--dir", dir.path, "--input", "synthetic:size=640x480,fps=10,frames=10", "--max-age", "30d", "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: dir.path))
        #expect(left.isDisjoint(with: old), "\(left)")
        #expect(left.contains("other-20250101-101010.000.avi"))
        #expect(left.contains { $0.hasPrefix(Self.prefix + "-") && $0.hasSuffix(".avi") }, "\(left)")
        let retention = events(result).filter { $0["type"] as? String == "retention" }
        #expect(retention.reduce(0) { $0 + ($1["count"] as? Int ?? 0) } == 2, "\(result.stdout)")
    }
}
