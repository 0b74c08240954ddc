// The port check (issue #32): runs the ported AVFoundation CameraController on a synthetic camera,
// as the app would, and checks what it printed and left behind:
//   - faces with roll and yaw (YuNet; the Haar cascade has neither) and the QR code;
//   - a JPEG with EXIF written by the photo delegate;
//   - no CaptureKit thread still alive once stopRunning() has returned (/proc/self/task).
// Exit status 0 when every check passes, 1 otherwise; each check prints one line.
//
//   PortCheck [--fixtures DIR] [--expect-faces yunet|error] [--timeout SECONDS]
//
// --expect-faces error: the models are hidden on purpose (Tools/test-port; the app did not opt in
// to the Haar cascade) and the check is that asking for faces fails loudly, with a typed error.
import CaptureKit
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

enum PortCheck {
    /// The face photos the scene shows (Tests/Fixtures/faces/images of the checkout by default).
    nonisolated(unsafe) static var fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().appendingPathComponent("../../../Fixtures/faces/images").standardized
}

var expectation = "yunet"
var timeout = 120.0
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--fixtures": PortCheck.fixtures = URL(fileURLWithPath: arguments.popFirst() ?? ".")
    case "--expect-faces": expectation = arguments.popFirst() ?? ""
    case "--timeout": timeout = Double(arguments.popFirst() ?? "") ?? timeout
    default:
        FileHandle.standardError.write(Data("usage: PortCheck [--fixtures DIR] [--expect-faces yunet|error] [--timeout S]\n".utf8))
        exit(64)
    }
}
guard ["yunet", "error"].contains(expectation) else {
    FileHandle.standardError.write(Data("PortCheck: --expect-faces is yunet or error\n".utf8))
    exit(64)
}

/// What the controller prints goes to a file (fd 1 redirected, no thread needed), read back here.
let transcript = FileManager.default.temporaryDirectory.appendingPathComponent("port-check-\(getpid()).txt")
FileManager.default.createFile(atPath: transcript.path, contents: nil)
let savedStdout = dup(STDOUT_FILENO)
let transcriptFD = open(transcript.path, O_WRONLY | O_TRUNC)
precondition(savedStdout >= 0 && transcriptFD >= 0, "cannot redirect stdout")
fflush(nil)
dup2(transcriptFD, STDOUT_FILENO)
close(transcriptFD)

@MainActor func printed() -> String {
    fflush(nil)
    return (try? String(contentsOf: transcript, encoding: .utf8)) ?? ""
}

/// Waits until `condition` holds, checking every 50 ms, for at most `timeout` seconds.
@MainActor func wait(_ what: String, _ condition: () -> Bool) -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while !condition() {
        if Date() > deadline { return false }
        usleep(50_000)
    }
    return true
}

/// This process's threads: id, name (/proc/self/task/ID/comm) and state (/proc/self/task/ID/stat).
@MainActor func threads() -> [(id: Int, name: String, state: String)] {
    let ids = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap(Int.init)
    return ids.sorted().compactMap { id in
        guard let name = try? String(contentsOfFile: "/proc/self/task/\(id)/comm", encoding: .utf8),
            let stat = try? String(contentsOfFile: "/proc/self/task/\(id)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }  // ended while being listed
        let state = stat[stat.index(close, offsetBy: 2)...].prefix(1)
        return (id, name.trimmingCharacters(in: .whitespacesAndNewlines), String(state))
    }
}

let before = Set(threads().map(\.id))
let controller = CameraController()
try? FileManager.default.removeItem(at: controller.photoURL)
controller.start()

let faceLine = #/face (\d+) bounds .* roll (-?[0-9.e+-]+) yaw (-?[0-9.e+-]+) layer Optional/#
@MainActor func faces(in text: String) -> [(id: Int, roll: Double, yaw: Double)] {
    text.split(separator: "\n").compactMap { line in
        guard let m = try? faceLine.firstMatch(in: String(line)) else { return nil }
        return (Int(m.1) ?? -1, Double(m.2) ?? 0, Double(m.3) ?? 0)
    }
}
let codeLine = "qr \(SyntheticScene.portCheckPayload) corners ["
var failures: [String] = []
var results: [String] = []
@MainActor func check(_ ok: Bool, _ what: String) {
    results.append("\(ok ? "ok  " : "FAIL") \(what)")
    if !ok { failures.append(what) }
}

// Where the face model comes from: without CVCAM_MODELS, a dependent's binary finds it in the
// library's resources beside it (swift build put them there).
if expectation == "yunet", ProcessInfo.processInfo.environment[FaceModelSearch.environmentVariable] == nil {
    let found = FaceModelSearch().locate(FaceDetector.yuNetModelName)
    check(
        found?.place == .resourceBundle,
        "YuNet is found in the library's resources beside the binary: \(found.map { "\($0.file.path) (\($0.place.rawValue))" } ?? "not found")")
}

if expectation == "error" {
    // No usable YuNet and no opt-in: starting must fail with the typed error, and nothing may run.
    check(
        wait("the start to fail") { printed().contains("Could not start the session") },
        "without a face model, startRunning() throws")
    check(printed().contains("no YuNet face model; looked for"), "the error is .faceModelUnavailable, naming where it looked")
    check(faces(in: printed()).isEmpty, "no faces are reported")
} else {
    check(
        wait("faces and the QR code") { let t = printed(); return faces(in: t).count >= 10 && t.contains(codeLine) },
        "faces and the QR code are reported")
    let found = faces(in: printed())
    // The Haar cascade reports neither angle (both print 0.0); YuNet's landmarks give both.
    let angled = found.filter { $0.roll != 0 && $0.yaw != 0 }
    check(
        angled.count * 2 >= found.count && Set(angled.map(\.id)).count >= 2,
        "two faces with roll and yaw (YuNet): \(angled.count) of \(found.count) reports")
    check(printed().contains(codeLine), "the QR code \"\(SyntheticScene.portCheckPayload)\" is reported with its corners")

    controller.focus(at: CGPoint(x: 195, y: 422))
    controller.capturePhoto()
    check(wait("the photo") { printed().contains("photo written to \(controller.photoURL.path)") }, "the photo delegate wrote the file")
    let jpeg = (try? Data(contentsOf: controller.photoURL)) ?? Data()
    let exif = jpeg.starts(with: [0xFF, 0xD8]) && jpeg.range(of: Data("Exif\0\0".utf8)) != nil
    check(exif, "\(controller.photoURL.lastPathComponent) is a JPEG with EXIF (\(jpeg.count) bytes)")
}

controller.stop()
// Straight after stopRunning() returned: no thread CaptureKit started may be left.
let left = threads().filter { !before.contains($0.id) }
let named = left.filter { $0.name.hasPrefix("cvcam") }
check(
    named.isEmpty,
    "no CaptureKit thread alive after stopRunning() (new threads: \(left.map { "\($0.name)[\($0.state)]" }.joined(separator: ", ")))")
check(printed().contains("stopped after"), "the controller stopped")

fflush(nil)
dup2(savedStdout, STDOUT_FILENO)
print("--- what the ported controller printed (\(transcript.path))")
let text = printed()
let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
print((lines.count > 40 ? lines.prefix(20) + ["…"] + lines.suffix(20) : lines[...]).joined(separator: "\n"))
print("--- checks (--expect-faces \(expectation))")
for line in results { print(line) }
try? FileManager.default.removeItem(at: transcript)
exit(failures.isEmpty ? 0 : 1)
