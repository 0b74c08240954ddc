import Foundation
import Testing

@testable import cvcam

/// Every numeric option and every `synthetic:` key refuses absurd numbers with a usage error
/// that names it: exit 64, never a trap (exit ≥ 128), in bounded time (issue #17, class 1).
@Suite struct NumericBoundaryTests {
    static let absurd = ["0", "-1", "nan", "inf", "1e300"]
    static let synthetic = "synthetic:frames=2,size=64x48"

    /// (subcommand and fixed arguments, option); each gets every absurd value. Options whose
    /// valid range includes 0 are listed in `zeroAllowed`.
    static let options: [([String], String)] = [
        (["faces", "--input", synthetic], "--fps"),
        (["faces", "--input", synthetic], "--update-interval"),
        (["faces", "--input", synthetic], "--face-scan-interval"),
        (["scan", "--input", synthetic], "--repeat-interval"),
        (["snap", "-o", "/nonexistent/x.jpg", "--input", synthetic], "--timeout"),
        (["snap", "-o", "/nonexistent/x.jpg", "--input", synthetic], "--interval"),
        (["snap", "-o", "/nonexistent/x.jpg", "--input", synthetic], "--count"),
        (["snap", "-o", "/nonexistent/x.jpg", "--input", synthetic], "--quality"),
        (["record", "-o", "/nonexistent/x.avi", "--input", synthetic], "--duration"),
        (["record", "-o", "/nonexistent/x.avi", "--input", synthetic], "--fragment-interval"),
        (["record", "-o", "/nonexistent/x.avi", "--input", synthetic], "--max-size"),
        (["watch", "--dir", "/nonexistent", "--input", synthetic], "--min-face-size"),
        (["watch", "--dir", "/nonexistent", "--input", synthetic], "--min-score"),
        (["watch", "--dir", "/nonexistent", "--input", synthetic], "--max-roll"),
        (["watch", "--dir", "/nonexistent", "--input", synthetic], "--max-yaw"),
        (["watch", "--dir", "/nonexistent", "--input", synthetic], "--min-sharpness"),
        (["watch", "--dir", "/nonexistent", "--input", synthetic], "--best-of"),
        (["watch", "--dir", "/nonexistent", "--input", synthetic], "--face-cooldown"),
        (["watch", "--dir", "/nonexistent", "--input", synthetic], "--cooldown"),
        (["watch", "--dir", "/nonexistent", "--input", synthetic], "--pre-frames"),
        (["watch", "--dir", "/nonexistent", "--input", synthetic], "--max-per-window"),
        (["watch", "--dir", "/nonexistent", "--input", synthetic], "--window"),
        (["watch", "--dir", "/nonexistent", "--input", synthetic], "--every"),
        (["watch", "--dir", "/nonexistent", "--input", synthetic], "--quality"),
    ]
    static let zeroAllowed: Set<String> = [
        "--update-interval", "--face-scan-interval", "--repeat-interval", "--interval", "--min-face-size",
        "--min-score", "--max-roll", "--max-yaw", "--min-sharpness", "--face-cooldown", "--cooldown", "--pre-frames",
    ]

    typealias Case = (arguments: [String], name: String)

    static let optionCases: [Case] = options.flatMap { command, option -> [Case] in
        let values = absurd.filter { !($0 == "0" && zeroAllowed.contains(option)) }
        return values.map { value -> Case in (command + ["\(option)=\(value)"], option) }
    }
    static let keyCases: [Case] = ["fps", "frames", "speed"].flatMap { key -> [Case] in
        // Negative and zero speeds are valid (right to left, still).
        let values = key == "speed" ? ["nan", "inf", "1e300"] : absurd
        return values.map { value -> Case in
            (["scan", "--input", "synthetic:frames=2,\(key)=\(value)"], "synthetic: \(key)")
        }
    }
    static let sizeCases: [Case] = ["0x0", "-1x5", "100000x100000", "nanxnan", "99999999999999999999x2"].map {
        size -> Case in (["scan", "--input", "synthetic:size=\(size)"], "synthetic: size")
    }
    static let exampleCases: [Case] = [
        (["scan", "--input", "synthetic:fps=1e10,frames=3"], "synthetic: fps"),
        (["scan", "--input", "synthetic:size=64x48,qr=A,qr=B,qr=C"], "synthetic:"),
        (["scan", "--input", "synthetic:bogus=1"], "synthetic: unknown key"),
        (["faces", "--fps", "0.0000001", "--input", synthetic], "--fps"),
        (["scan", "--rect-of-interest=0.1,abc,0.2,0.3,0.4", "--input", synthetic], "--rect-of-interest"),
        (["scan", "--rect-of-interest=nan,0,0.5,0.5", "--input", synthetic], "--rect-of-interest"),
        (["scan", "--types", "", "--input", synthetic], "--types"),
        (["scan", "--types", "qr,", "--input", synthetic], "--types"),
        (["scan", "--size", "100000x100000", "--input", synthetic], "--size"),
        (["scan", "--view", "0x10", "--input", synthetic], "--view"),
    ]
    static let cases: [Case] = optionCases + keyCases + sizeCases + exampleCases

    @Test(arguments: cases.indices) func absurdNumberIsAUsageError(_ index: Int) throws {
        let (arguments, name) = Self.cases[index]
        let start = Date()
        let result = try CLI.run(arguments)
        #expect(result.status == 64, "\(arguments): exit \(result.status), stderr: \(result.stderr)")
        #expect(result.status < 128, "\(arguments) crashed")
        #expect(result.stderr.contains(name), "\(arguments): the error should name \(name): \(result.stderr)")
        #expect(Date().timeIntervalSince(start) < 10)
    }

    /// The issue's examples that used to trap: each now ends with an ordinary exit code.
    @Test func formerTrapsEndOrdinarily() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-numbers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let runs: [[String]] = [
            ["record", "-o", dir.appendingPathComponent("d.avi").path, "--duration", "inf", "--input", "synthetic:frames=5"],
            ["faces", "--fps", "0.0000001", "--input", CLI.fixture("images")],
        ]
        for arguments in runs {
            let result = try CLI.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.status) \(result.stderr)")
        }
    }

    /// The status line's ETA from a rate near zero, infinite or NaN.
    @Test(arguments: [1e-300, .leastNonzeroMagnitude, .infinity, .nan, -1.0])
    func progressWithAnAbsurdRateDoesNotTrap(_ rate: Double) {
        #expect(StatusLine.progress(done: 1, total: 10, perSecond: rate).hasPrefix("[##"))
    }
}
