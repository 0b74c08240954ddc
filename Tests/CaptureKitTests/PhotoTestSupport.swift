@testable import CaptureKit
@testable import CaptureVision
import CVBridge
import Dispatch
import Foundation
import Testing

/// Shared helpers for the photo, snapshot and movie tests.
enum PhotoTestSupport {
    static var packageRoot: URL {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }

    /// A fresh empty folder under the system's temporary directory.
    static func temporaryFolder(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A scene with a noisy background and a bright block in the top-left quadrant (so
    /// orientation mistakes show), endless unless `frameCount` is set.
    static func scene(width: Int = 320, height: Int = 240, frameCount: Int? = nil) -> SyntheticScene {
        SyntheticScene(
            size: .init(width: width, height: height), frameRate: 30, frameCount: frameCount,
            background: .noise(seed: 11, mean: 90, standardDeviation: 30),
            sprites: [
                .init(content: .color(red: 250, green: 30, blue: 30), size: .init(width: width / 4, height: height / 4),
                      origin: CGPoint(x: width / 10, y: height / 10))
            ])
    }

    /// The first frame of `scene()` at `width`x`height`, rendered without a session.
    static func firstFrame(width: Int, height: Int) throws -> PixelBuffer {
        let source = try SyntheticCameraSource(scene: scene(width: width, height: height))
        try source.open(format: source.formats[0], frameDuration: MediaTime(value: 1, timescale: 30))
        defer { source.close() }
        return try #require(try source.nextFrame(isCancelled: { false })).pixelBuffer
    }

    /// A running session with `output` on a synthetic camera.
    static func runningSession(_ output: CaptureOutput, scene: SyntheticScene = scene(), pacing: FramePacing = .realTime)
        throws -> CaptureSession
    {
        try runningSession(CaptureDevice(syntheticScene: scene, pacing: pacing), outputs: [output])
    }

    /// A running session on `device` (at `preset`, when given) with `outputs`.
    static func runningSession(_ device: CaptureDevice, preset: SessionPreset? = nil, outputs: [CaptureOutput]) throws
        -> CaptureSession
    {
        let session = CaptureSession()
        if let preset { try session.setSessionPreset(preset) }
        try session.addInput(try CaptureDeviceInput(device: device))
        for output in outputs { try session.addOutput(output) }
        try session.startRunning()
        return session
    }

    /// Runs `/usr/bin/python3` (Debian's, with Pillow) on `script` with `args`; returns stdout.
    static func python(_ script: String, _ args: [String]) throws -> String {
        try run("/usr/bin/python3", ["-c", script] + args)
    }

    /// Runs a program and returns its standard output; throws when it fails.
    static func run(_ program: String, _ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: program)
        p.arguments = args
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw CaptureError(.deviceFailure, "\(program) failed: \(String(decoding: errData, as: UTF8.self))")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Counts the frames OpenCV's FFmpeg reader decodes from a movie (a reader independent of the writer).
    static func countFrames(_ url: URL) throws -> (count: Int, size: CaptureDevice.Dimensions) {
        let source = try VideoFileSource(path: url.path, pacing: .asFastAsPossible)
        let format = source.formats[0]
        try source.open(format: format, frameDuration: format.minFrameDuration ?? MediaTime(value: 1, timescale: 30))
        defer { source.close() }
        var n = 0
        while (try? source.nextFrame(isCancelled: { false })) ?? nil != nil { n += 1 }
        return (n, format.dimensions)
    }

    /// Mounts a tmpfs of `bytes` at a new folder (root only); nil when mounting is not possible here.
    static func mountTmpfs(bytes: Int, readOnly: Bool = false) -> URL? {
        guard getuid() == 0, let folder = try? temporaryFolder("tmpfs") else { return nil }
        let options = "size=\(bytes)" + (readOnly ? ",ro" : "")
        guard (try? run("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", folder.path])) != nil else {
            try? FileManager.default.removeItem(at: folder)
            return nil
        }
        return folder
    }

    /// Whether this process may mount a tmpfs (root with CAP_SYS_ADMIN), tried once.
    static let canMountTmpfs: Bool = {
        guard let probe = mountTmpfs(bytes: 4096) else { return false }
        unmount(probe)
        return true
    }()

    static func unmount(_ folder: URL) {
        _ = try? run("/bin/umount", [folder.path])
        try? FileManager.default.removeItem(at: folder)
    }
}

/// Wraps the real system calls and fails chosen ones, to inject a full disk without one.
final class FailingFileCalls: FileSystemCalls, @unchecked Sendable {
    // @unchecked: counters are behind `lock`.
    let real = SystemFileCalls()
    let lock = NSLock()
    /// Fail `write`/`pwrite` with this errno once this many bytes went through.
    var failWritesAfter: Int?
    var failWith: Int32 = ENOSPC
    /// Free space reported: this minus the bytes written.
    var freeSpace: Int64?
    private(set) var bytesWritten = 0

    func open(_ path: String, flags: Int32, mode: mode_t) -> Result<Int32, FileErrno> { real.open(path, flags: flags, mode: mode) }
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, FileErrno> {
        if let e = shouldFail(bytes.count) { return .failure(e) }
        let r = real.write(fd, bytes)
        if case .success(let n) = r { lock.withLock { bytesWritten += n } }
        return r
    }
    func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, offset: Int64) -> Result<Int, FileErrno> {
        real.pwrite(fd, bytes, offset: offset)
    }
    func fsync(_ fd: Int32) -> Result<Void, FileErrno> { real.fsync(fd) }
    func close(_ fd: Int32) -> Result<Void, FileErrno> { real.close(fd) }
    func rename(_ from: String, _ to: String) -> Result<Void, FileErrno> { real.rename(from, to) }
    func unlink(_ path: String) -> Result<Void, FileErrno> { real.unlink(path) }
    func availableBytes(at path: String) -> Result<Int64, FileErrno> {
        if let free = freeSpace { return .success(free - Int64(lock.withLock { bytesWritten })) }
        return real.availableBytes(at: path)
    }
    private func shouldFail(_ count: Int) -> FileErrno? {
        lock.withLock {
            guard let limit = failWritesAfter, bytesWritten + count > limit else { return nil }
            return FileErrno(rawValue: failWith)
        }
    }
}
