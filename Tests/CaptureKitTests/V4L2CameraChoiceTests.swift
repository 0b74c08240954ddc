import CaptureKit
import Foundation
import Testing

/// Choosing a camera format from size, rate and pixel format, and v4l2-ctl's control names,
/// on a UVC webcam's mode table (no device needed).
@Suite struct CameraFormatChoiceTests {
    static func format(_ fourCC: String, _ width: Int, _ height: Int, _ rates: [Double]) -> CaptureDevice.Format {
        CaptureDevice.Format(
            mediaSubType: fourCC, pixelFormat: fourCC == "MJPG" ? .bgr : .yuyv,
            dimensions: .init(width: width, height: height),
            videoSupportedFrameRateRanges: rates.map { .init(framesPerSecond: $0) })
    }

    /// As a typical webcam lists them: raw formats first, slow at large sizes.
    static let webcam = [
        format("YUYV", 640, 480, [30, 15]), format("YUYV", 1280, 720, [10, 5]),
        format("MJPG", 640, 480, [30, 15]), format("MJPG", 1280, 720, [30, 15]),
    ]

    func choose(_ size: (Int, Int)? = nil, fps: Double? = nil, _ fourCC: String? = nil) -> String? {
        let request = CaptureDevice.FormatRequest(
            dimensions: size.map { .init(width: $0.0, height: $0.1) }, framesPerSecond: fps, mediaSubType: fourCC)
        guard let choice = CaptureDevice.bestFormat(in: Self.webcam, for: request) else { return nil }
        return "\(choice.format.mediaSubType) \(choice.format.dimensions)@\(choice.frameDuration.framesPerSecond)"
    }

    @Test func aSizeTakesItsFastestFormatNotItsFirst() {
        #expect(choose((1280, 720)) == "MJPG 1280x720@30.0")
        #expect(choose((1280, 720), fps: 30) == "MJPG 1280x720@30.0")
        #expect(choose((1280, 720), fps: 15) == "MJPG 1280x720@15.0")
        // Only the raw format has 10 fps at that size.
        #expect(choose((1280, 720), fps: 10) == "YUYV 1280x720@10.0")
        #expect(choose((1280, 720), fps: 60) == nil)
    }

    @Test func equalRatesPreferTheFormatThatNeedsNoDecoding() {
        #expect(choose((640, 480)) == "YUYV 640x480@30.0")
        #expect(choose((640, 480), fps: 30, "MJPG") == "MJPG 640x480@30.0")
    }

    @Test func aPixelFormatAloneTakesItsFastestModeAndARateAloneTheLargestSizeThatReachesIt() {
        #expect(choose(nil, "YUYV") == "YUYV 640x480@30.0")
        #expect(choose((1280, 720), "yuyv") == "YUYV 1280x720@10.0")
        #expect(choose(fps: 30) == "MJPG 1280x720@30.0")
        #expect(choose(fps: 5) == "YUYV 1280x720@5.0")
        #expect(choose(nil, "NV12") == nil)
    }

    @Test func ratesMatchWithinHalfAPercentAndKeepTheFormatsOwnDuration() {
        let ntsc = CaptureDevice.Format(
            mediaSubType: "YUYV", pixelFormat: .yuyv, dimensions: .init(width: 640, height: 480),
            videoSupportedFrameRateRanges: [.init(minFrameDuration: MediaTime(value: 1001, timescale: 30000),
                                                  maxFrameDuration: MediaTime(value: 1001, timescale: 30000))])
        #expect(ntsc.frameDuration(near: 29.97) == MediaTime(value: 1001, timescale: 30000))
        #expect(ntsc.frameDuration(near: 30) == MediaTime(value: 1001, timescale: 30000))
        #expect(ntsc.frameDuration(near: 29) == nil)
        #expect(ntsc.frameDuration(near: .nan) == nil)
        let ranged = CaptureDevice.Format(
            mediaSubType: "YUYV", pixelFormat: .yuyv, dimensions: .init(width: 640, height: 480),
            videoSupportedFrameRateRanges: [.init(minFrameDuration: MediaTime(value: 1, timescale: 60),
                                                  maxFrameDuration: MediaTime(value: 1, timescale: 1))])
        #expect(ranged.frameDuration(near: 25) == MediaTime(value: 1, timescale: 25))
        #expect(ranged.frameDuration(near: 61) == nil)
    }

    @Test func controlNamesAreV4L2CtlsNames() {
        let name = CaptureDevice.ControlDescription.v4l2Name
        #expect(name("Brightness") == "brightness")
        #expect(name("Exposure Time, Absolute") == "exposure_time_absolute")
        #expect(name("White Balance, Automatic") == "white_balance_automatic")
        #expect(name("  Auto Exposure, Bias  ") == "auto_exposure_bias")
        #expect(name("LED1 Mode (x--y)") == "led1_mode_x_y")
        #expect(name("Zoom, Absolute é") == "zoom_absolute")
        #expect(name("---") == "")
    }
}

/// The same against the emulated camera (Tools/test preloads it; these run in that pass).
extension V4L2EmulatorTests {
    @Test func aSizeOnTheEmulatedCameraStreamsItsFastestFormat() throws {
        let device = try V4L2Emulator.device()
        let choice = try device.format(for: .init(dimensions: .init(width: 1280, height: 720)))
        #expect(choice.format.mediaSubType == "MJPG" && choice.frameDuration == MediaTime(value: 1, timescale: 30))
        do {
            _ = try device.format(for: .init(dimensions: .init(width: 1280, height: 720), framesPerSecond: 60))
            Issue.record("60 fps at 1280x720 was found")
        } catch {
            #expect(error.code == .formatNotSupported)
            #expect(error.message.contains("MJPG 1280x720 @ 30 fps, 15 fps"), "\(error.message)")
        }
    }

    @Test func aRateTheDriverCapsIsReportedAsAdjusted() throws {
        V4L2Emulator.setFaults("max-fps 15")
        defer { V4L2Emulator.clearFaults() }
        let source = try V4L2FrameSource(path: V4L2Emulator.capturePath)
        let mjpeg = try #require(source.formats.first { $0.mediaSubType == "MJPG" && $0.dimensions.width == 1280 })
        try source.open(format: mjpeg, frameDuration: MediaTime(value: 1, timescale: 30))
        source.close()
        let n = try #require(source.lastNegotiation)
        #expect(n.wasAdjusted)
        #expect(n.granted.description == "MJPG 1280x720@15")
        #expect(n.description == "requested MJPG 1280x720@30, got MJPG 1280x720@15 (adjusted by the driver)")
    }

    @Test func discoverySaysWhyANodeCouldNotBeOpened() throws {
        var onlyEmulated = V4L2SystemCalls.live
        onlyEmulated.listDirectory = { _ in [] }
        for (fault, code) in [("eacces", CaptureError.Code.permissionDenied), ("busy", .deviceBusy)] {
            V4L2Emulator.setFaults(fault)
            let survey = V4L2Discovery.survey(system: onlyEmulated)
            #expect(survey.devices.isEmpty)
            // Both nodes refuse the open (the metadata node too).
            #expect(Set(survey.unavailable.map(\.code)) == [code], "\(fault)")
            #expect(survey.unavailable.contains { $0.path == V4L2Emulator.capturePath })
        }
        V4L2Emulator.clearFaults()
        let survey = V4L2Discovery.survey(system: onlyEmulated)
        #expect(survey.devices.count == 1 && survey.unavailable.isEmpty)
    }

    @Test func controlsAreFoundByTheirV4L2CtlNamesOldAndNew() throws {
        let device = try V4L2Emulator.device()
        #expect(try device.control(named: "exposure_time_absolute")?.control == .exposureAbsolute)
        #expect(try device.control(named: "exposure_absolute")?.control == .exposureAbsolute)
        #expect(try device.control(named: "white_balance_automatic")?.control == .autoWhiteBalance)
        #expect(try device.control(named: "Brightness") == nil)
        #expect(try device.controlDescriptions().allSatisfy { $0.v4l2Name == CaptureDevice.ControlDescription.v4l2Name($0.name) })
    }
}
