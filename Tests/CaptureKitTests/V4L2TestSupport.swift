import CVBridge
import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

/// Helpers for the tests that drive the emulated V4L2 camera (Sources/V4L2Emulator), which
/// `Tools/test` loads with LD_PRELOAD for a second run filtered to `V4L2Emulator`.
enum V4L2Emulator {
    /// Whether the emulator is interposed in this process.
    static let isLoaded: Bool = dlsym(nil, "v4l2_emulator_loaded") != nil

    static let skipMessage =
        "the V4L2 emulator is not loaded; Tools/test runs these tests again with LD_PRELOAD=.build/debug/libV4L2Emulator.so"

    static let capturePath = "/dev/video-emulated0"
    static let metadataPath = "/dev/video-emulated1"

    /// The fault file the emulator reads at every open.
    static var controlFile: String {
        ProcessInfo.processInfo.environment["V4L2_EMULATOR_CONTROL"] ?? "/tmp/v4l2-emulator-\(getpid()).control"
    }

    /// Arms faults (`busy`, `eacces`, `unplug-after N`, `slow MS`) for the next opens.
    static func setFaults(_ lines: String...) {
        _ = FileManager.default.createFile(atPath: controlFile, contents: Data(lines.joined(separator: "\n").utf8))
    }

    static func clearFaults() { try? FileManager.default.removeItem(atPath: controlFile) }

    /// The emulated camera as discovery presents it.
    static func device() throws -> CaptureDevice {
        let devices = CaptureDevice.DiscoverySession(deviceTypes: [.external], mediaType: .video, position: .unspecified)
            .devices
        return try #require(devices.first { $0.source.capabilities?.devicePath == capturePath })
    }

    /// Puts every control back to its default (the emulator keeps values across opens, like a driver).
    static func resetControls(_ device: CaptureDevice) throws {
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        // Manual modes first, so every control they own is active and can be reset; then the
        // modes themselves; then the bias, which only auto exposure makes active.
        let modes: [CaptureDevice.Control] = [.exposureAuto, .autoWhiteBalance, .focusAuto]
        try device.setValue(1, for: .exposureAuto)
        try device.setValue(0, for: .autoWhiteBalance)
        try device.setValue(0, for: .focusAuto)
        let all = try device.controlDescriptions()
        // Compound controls (the region of interest) have no single value to reset.
        for c in all where !modes.contains(c.control) && c.control != .autoExposureBias && !c.flags.contains("has-payload") {
            try device.setValue(c.defaultValue, for: c.control)
        }
        for c in all where modes.contains(c.control) { try device.setValue(c.defaultValue, for: c.control) }
        for c in all where c.control == .autoExposureBias { try device.setValue(c.defaultValue, for: c.control) }
    }

    /// Descriptors and mappings that belong to the emulated camera (its memfds).
    static func openResources() -> (descriptors: Int, mappings: Int, allDescriptors: Int) {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let emulated = fds.filter {
            ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) ?? "").contains("video-emulated")
        }
        let mapped = processMaps().split(separator: "\n").filter { $0.contains("video-emulated") }
        return (emulated.count, mapped.count, fds.count)
    }

    /// All of /proc/self/maps. `String(contentsOfFile:)` returned only its first 4 KB here (of
    /// ~50 KB; /proc reports a size of 0), so a mapping listed further down, where address-space
    /// randomisation sometimes puts the camera's buffers, went unseen and the tests flaked.
    static func processMaps() -> String {
        guard let handle = FileHandle(forReadingAtPath: "/proc/self/maps") else { return "" }
        defer { try? handle.close() }
        return String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
    }
}

/// Waits for the first session event matching `predicate`, or nil after `timeout` seconds.
func nextEvent(
    _ events: AsyncStream<CaptureSession.Event>, timeout: Double = 10,
    where predicate: @escaping @Sendable (CaptureSession.Event) -> Bool
) async -> CaptureSession.Event? {
    await withTaskGroup(of: CaptureSession.Event?.self) { group in
        group.addTask {
            for await event in events where predicate(event) { return event }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(timeout))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// Mean absolute difference between a delivered BGR frame and a fixture image scaled to the
/// frame's size, sampled on a grid (`cv::imread`, `cv::resize` through CVBridge).
func meanDifference(_ frame: PixelBuffer, fixture path: String) throws -> Double {
    var err = cvb_error()
    let mat = try #require(cvb_image_read(path, Int32(CVB_FORMAT_BGR.rawValue), &err))
    defer { cvb_mat_release(mat) }
    var src = cvb_mat_image(mat)
    let scaled = try PixelBuffer(width: frame.width, height: frame.height, pixelFormat: .bgr)
    var dst = cvb_image(
        data: scaled.baseAddress.assumingMemoryBound(to: UInt8.self), width: Int32(scaled.width),
        height: Int32(scaled.height), stride: Int32(scaled.bytesPerRow), format: Int32(CVB_FORMAT_BGR.rawValue))
    #expect(cvb_image_resize(&src, &dst, PixelBuffer.resizeInterpolation(src, to: dst), &err) == 0)
    var total = 0.0
    var samples = 0
    for y in stride(from: 4, to: frame.height, by: 8) {
        for x in stride(from: 4, to: frame.width, by: 8) {
            for (a, b) in zip(frame.pixel(x: x, y: y), scaled.pixel(x: x, y: y)) {
                total += abs(Double(a) - Double(b))
                samples += 1
            }
        }
    }
    return total / Double(samples)
}

/// The face fixtures folder.
let v4l2FixtureImages: String = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
        url.deleteLastPathComponent()
    }
    return url.appendingPathComponent("Tests/Fixtures/faces/images").path
}()

/// Holds `ExclusiveAccess.emulatedCamera` while a suite runs, so suites in other test targets that
/// stream from the emulated camera (cvcamTests' PreviewV4L2EmulatorTests) wait their turn.
struct EmulatedCameraAccess: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await ExclusiveAccess.emulatedCamera.run(function)
    }
}

extension Trait where Self == EmulatedCameraAccess {
    /// The suite holds the emulated camera for all its tests.
    static var emulatedCamera: Self { Self() }
}
