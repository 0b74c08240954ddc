import CV4L2
import CaptureKit
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension V4L2EmulatorTests {
    /// Focus and exposure points of interest against the emulated camera's UVC region of
    /// interest. The region is read back with a raw `VIDIOC_G_EXT_CTRLS` on a descriptor of the
    /// test's own, not through CaptureKit. Nested, so it is serialized with the other emulator tests.
    @Suite struct PointsOfInterest {
        let device: CaptureDevice

        /// The emulated camera's smallest region (controls.c).
        static let minimumRegion = (width: UInt32(160), height: UInt32(120))
        static let autoExposure: Int32 = 1 << 0
        static let autoFocus: Int32 = 1 << 3

        init() throws {
            V4L2Emulator.clearFaults()
            device = try V4L2Emulator.device()
            try V4L2Emulator.resetControls(device)
            try Self.setFormat(width: 640, height: 480)
        }

        /// Switches the emulated camera's format (the emulator keeps it across opens).
        static func setFormat(width: Int, height: Int) throws {
            let source = try V4L2FrameSource(path: V4L2Emulator.capturePath)
            let format = try #require(
                source.formats.first { $0.mediaSubType == "YUYV" && $0.dimensions == .init(width: width, height: height) })
            try source.open(format: format, frameDuration: format.minFrameDuration!)
            source.close()
        }

        /// The region and the auto bitmask as the emulated driver holds them.
        static func region(which: UInt32 = CV4L2_CTRL_WHICH_CUR_VAL) throws -> (rect: [Int64], bits: Int32) {
            let fd = open(V4L2Emulator.capturePath, O_RDWR)
            try #require(fd >= 0, "open \(V4L2Emulator.capturePath): errno \(errno)")
            defer { close(fd) }
            var rect = v4l2_rect()
            var entries = [v4l2_ext_control(), v4l2_ext_control()]
            let result = withUnsafeMutablePointer(to: &rect) { rectPointer in
                entries[0].id = CaptureDevice.Control.regionOfInterestRect.rawValue
                entries[0].size = UInt32(MemoryLayout<v4l2_rect>.size)
                entries[0].ptr = UnsafeMutableRawPointer(rectPointer)
                entries[1].id = CaptureDevice.Control.regionOfInterestAuto.rawValue
                let count = which == CV4L2_CTRL_WHICH_CUR_VAL ? 2 : 1  // the bitmask has no MIN/MAX
                return entries.withUnsafeMutableBufferPointer { buffer in
                    var list = v4l2_ext_controls()
                    list.which = which
                    list.count = UInt32(count)
                    list.controls = buffer.baseAddress
                    return cv4l2_v4l2_ioctl(fd, CV4L2_VIDIOC_G_EXT_CTRLS, &list)
                }
            }
            try #require(result == 0, "VIDIOC_G_EXT_CTRLS: errno \(errno)")
            return ([Int64(rect.left), Int64(rect.top), Int64(rect.width), Int64(rect.height)], entries[1].value)
        }

        private func expectError(
            _ code: CaptureError.Code, containing phrase: String, _ body: () throws -> Void,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            do {
                try body()
                Issue.record("expected \(code), nothing was thrown", sourceLocation: sourceLocation)
            } catch let error as CaptureError {
                #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
                #expect(error.message.contains(phrase), "\(error.message)", sourceLocation: sourceLocation)
            } catch {
                Issue.record("expected a CaptureError, got \(error)", sourceLocation: sourceLocation)
            }
        }

        @Test func theRegionOfInterestMakesBothPointsSupported() throws {
            #expect(device.isFocusPointOfInterestSupported)
            #expect(device.isExposurePointOfInterestSupported)
            #expect(device.focusPointOfInterest == CGPoint(x: 0.5, y: 0.5))
            #expect(device.exposurePointOfInterest == CGPoint(x: 0.5, y: 0.5))
            // The driver's window and smallest region, which the policy sizes regions from.
            #expect(try Self.region(which: CV4L2_CTRL_WHICH_MAX_VAL).rect == [0, 0, 640, 480])
            #expect(try Self.region(which: CV4L2_CTRL_WHICH_MIN_VAL).rect == [0, 0, 160, 120])
            // A compound control has no single value: the generic API refuses it with advice.
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            expectError(.unsupported, containing: "setFocusPointOfInterest") { try device.setValue(1, for: .regionOfInterestRect) }
            expectError(.unsupported, containing: "compound") { _ = try device.value(of: .regionOfInterestRect) }
        }

        @Test func listingControlsNeverReadsTheRectangleWithGCtrl() throws {
            // Every VIDIOC_G_CTRL's control ID, seen through the syscall seam.
            let singleReads = Mutex<[UInt32]>([])
            var system = V4L2SystemCalls.live
            let live = V4L2SystemCalls.live
            system.ioctl = { fd, request, arg in
                if request == CV4L2_VIDIOC_G_CTRL {
                    let id = arg.assumingMemoryBound(to: v4l2_control.self).pointee.id
                    singleReads.withLock { $0.append(id) }
                }
                return live.ioctl(fd, request, arg)
            }
            let report = try V4L2DeviceReport(path: V4L2Emulator.capturePath, system: system)
            #expect(report.controls.contains { $0.control == .regionOfInterestRect })
            let reads = singleReads.withLock { $0 }
            #expect(reads.contains(CaptureDevice.Control.regionOfInterestAuto.rawValue), "the bitmask is an ordinary value")
            #expect(!reads.contains(CaptureDevice.Control.regionOfInterestRect.rawValue))
        }

        /// The tap-to-focus code of an AVFoundation app, unchanged: settable points and modes
        /// write the same region as the throwing forms (issue #32, row 6).
        @Test func theAVFoundationSpellingSetsPointsAndModes() throws {
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            let point = CGPoint(x: 0.25, y: 0.75)
            #expect(device.isFocusPointOfInterestSupported && device.isFocusModeSupported(.continuousAutoFocus))
            device.focusPointOfInterest = point
            device.focusMode = .continuousAutoFocus
            #expect(device.focusPointOfInterest == point)
            #expect(device.focusMode == .continuousAutoFocus)
            var now = try Self.region()
            #expect(now.rect == [80, 300, 160, 120])
            #expect(now.bits & Self.autoFocus != 0)

            #expect(device.isExposurePointOfInterestSupported && device.isExposureModeSupported(.continuousAutoExposure))
            device.exposurePointOfInterest = point
            device.exposureMode = .continuousAutoExposure
            #expect(device.exposurePointOfInterest == point)
            #expect(device.exposureMode == .continuousAutoExposure)
            now = try Self.region()
            #expect(now.bits & (Self.autoFocus | Self.autoExposure) == Self.autoFocus | Self.autoExposure)
            device.focusMode = .locked
            #expect(try device.currentFocusMode() == .locked)
        }

        @Test func aPointTakesEffectWithTheNextAutomaticMode() throws {
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            try device.setFocusMode(.continuousAutoFocus)
            let before = try Self.region()
            try device.setFocusPointOfInterest(CGPoint(x: 0.25, y: 0.75))
            try device.setExposurePointOfInterest(CGPoint(x: 0.25, y: 0.75))
            #expect(device.focusPointOfInterest == CGPoint(x: 0.25, y: 0.75))
            #expect(try Self.region() == before, "setting a point alone changes nothing on the camera")

            // 640x480: a fifth of each side (128x96) is below the camera's smallest region, so
            // the region is 160x120 around (160, 360).
            try device.setFocusMode(.continuousAutoFocus)
            var now = try Self.region()
            #expect(now.rect == [80, 300, 160, 120])
            #expect(now.bits & Self.autoFocus != 0)
            #expect(try device.currentFocusMode() == .continuousAutoFocus)

            // The same point for exposure: the region stays, and both bits are set.
            try device.setExposureMode(.continuousAutoExposure)
            now = try Self.region()
            #expect(now.rect == [80, 300, 160, 120])
            #expect(now.bits & (Self.autoFocus | Self.autoExposure) == Self.autoFocus | Self.autoExposure)

            // Locking focus leaves the region alone.
            try device.setFocusPointOfInterest(CGPoint(x: 0.9, y: 0.1))
            try device.setFocusMode(.locked)
            #expect(try Self.region() == now)
        }

        @Test func aPointAtACornerGivesARegionInsideTheFrame() throws {
            try Self.setFormat(width: 1280, height: 720)
            defer { try? Self.setFormat(width: 640, height: 480) }
            #expect(try Self.region(which: CV4L2_CTRL_WHICH_MAX_VAL).rect == [0, 0, 1280, 720])
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            // 1280x720: a fifth of each side, 256x144, pushed inside at the bottom right corner.
            try device.setExposurePointOfInterest(CGPoint(x: 1, y: 1))
            try device.setExposureMode(.continuousAutoExposure)
            var now = try Self.region()
            #expect(now.rect == [1024, 576, 256, 144])
            #expect(now.bits & Self.autoExposure != 0)
            // Focus at the top left corner moves the camera's one region: exposure no longer
            // follows it (its bit is cleared), focus does.
            try device.setFocusPointOfInterest(CGPoint(x: 0, y: 0))
            try device.setFocusMode(.continuousAutoFocus)
            now = try Self.region()
            #expect(now.rect == [0, 0, 256, 144])
            #expect(now.bits & (Self.autoFocus | Self.autoExposure) == Self.autoFocus)
            // A point inside: centred on it (640 - 128, 360 - 72).
            try device.setFocusPointOfInterest(CGPoint(x: 0.5, y: 0.5))
            try device.setFocusMode(.continuousAutoFocus)
            #expect(try Self.region().rect == [512, 288, 256, 144])
        }

        @Test func pointsOutsideTheFrameOrWithoutTheLockAreRefused() throws {
            expectError(.deviceNotLockedForConfiguration, containing: "lockForConfiguration()") { try device.setFocusPointOfInterest(CGPoint(x: 0.5, y: 0.5)) }
            expectError(.deviceNotLockedForConfiguration, containing: "lockForConfiguration()") { try device.setExposurePointOfInterest(CGPoint(x: 0.5, y: 0.5)) }
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            try device.setFocusPointOfInterest(CGPoint(x: 0.3, y: 0.3))
            for point in [CGPoint(x: -0.01, y: 0.5), CGPoint(x: 0.5, y: 1.01), CGPoint(x: Double.nan, y: 0.5), CGPoint(x: 2, y: -1)] {
                expectError(.valueOutOfRange, containing: "outside the frame") { try device.setFocusPointOfInterest(point) }
                expectError(.valueOutOfRange, containing: "outside the frame") { try device.setExposurePointOfInterest(point) }
            }
            #expect(device.focusPointOfInterest == CGPoint(x: 0.3, y: 0.3), "a refused point leaves the last one")
        }

        @Test func withoutTheRegionOfInterestThePointsAreUnsupported() throws {
            // A point set while the camera had the region must not break its modes afterwards.
            try device.lockForConfiguration()
            try device.setFocusPointOfInterest(CGPoint(x: 0.2, y: 0.2))
            device.unlockForConfiguration()

            V4L2Emulator.setFaults("no-roi")
            defer { V4L2Emulator.clearFaults() }
            #expect(try device.controlDescription(.regionOfInterestRect) == nil)
            #expect(try device.controlDescriptions().count == 14)
            #expect(!device.isFocusPointOfInterestSupported)
            #expect(!device.isExposurePointOfInterestSupported)
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            expectError(.unsupported, containing: "UVC region-of-interest") { try device.setFocusPointOfInterest(CGPoint(x: 0.5, y: 0.5)) }
            expectError(.unsupported, containing: "UVC region-of-interest") {
                try device.setExposurePointOfInterest(CGPoint(x: 0.5, y: 0.5))
            }
            try device.setFocusMode(.continuousAutoFocus)
            try device.setExposureMode(.continuousAutoExposure)
            #expect(try device.currentFocusMode() == .continuousAutoFocus)
        }
    }
}
