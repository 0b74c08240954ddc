import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

extension V4L2EmulatorTests {
    /// Every control through the AVFoundation-shaped API, against the emulated camera's
    /// QUERY_EXT_CTRL ranges, menus and inactive flags. Nested, so it is serialized with the
    /// other emulator tests.
    @Suite struct Controls {
        let device: CaptureDevice

        init() throws {
            V4L2Emulator.clearFaults()
            device = try V4L2Emulator.device()
            try V4L2Emulator.resetControls(device)
        }

        private func expectError(_ code: CaptureError.Code, _ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
            do {
                try body()
                Issue.record("expected \(code), nothing was thrown", sourceLocation: sourceLocation)
            } catch let error as CaptureError {
                #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
            } catch {
                Issue.record("expected a CaptureError, got \(error)", sourceLocation: sourceLocation)
            }
        }

        @Test func nothingIsSetWithoutTheConfigurationLock() throws {
            expectError(.deviceNotLockedForConfiguration) { try device.setValue(10, for: .brightness) }
            expectError(.deviceNotLockedForConfiguration) { try device.setFocusMode(.locked) }
            expectError(.deviceNotLockedForConfiguration) { try device.setExposureMode(.custom) }
            expectError(.deviceNotLockedForConfiguration) { try device.setWhiteBalanceMode(.locked) }
            expectError(.deviceNotLockedForConfiguration) { try device.setVideoZoomFactor(2) }
            expectError(.deviceNotLockedForConfiguration) { try device.setTorchMode(.off) }
            #expect(try device.value(of: .brightness) == 0)
            #expect(try device.currentFocusMode() == .continuousAutoFocus)
        }

        @Test(arguments: [
            (CaptureDevice.Control.brightness, Int64(-64), Int64(64)), (.contrast, 0, 100), (.saturation, 0, 100),
            (.sharpness, 0, 7),
        ])
        func genericControlsRoundTripAndCheckTheirRange(control: CaptureDevice.Control, minimum: Int64, maximum: Int64) throws {
            let d = try #require(try device.controlDescription(control))
            #expect(d.minimum == minimum && d.maximum == maximum && d.type == "int")
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            for value in [minimum, (minimum + maximum) / 2 + 1, maximum] {
                #expect(try device.setValue(value, for: control) == value)
                #expect(try device.value(of: control) == value)
            }
            expectError(.valueOutOfRange) { try device.setValue(maximum + 1, for: control) }
            expectError(.valueOutOfRange) { try device.setValue(minimum - 1, for: control) }
            #expect(try device.value(of: control) == maximum)
        }

        @Test func menusAcceptOnlyTheirEntries() throws {
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            #expect(try device.setValue(2, for: .powerLineFrequency) == 2)
            expectError(.valueOutOfRange) { try device.setValue(3, for: .powerLineFrequency) }
            // Exposure's menu has holes (1 and 3 only), as UVC's does.
            expectError(.valueOutOfRange) { try device.setValue(2, for: .exposureAuto) }
        }

        @Test func focus() throws {
            #expect(device.isFocusModeSupported(.locked))
            #expect(device.isFocusModeSupported(.continuousAutoFocus))
            #expect(!device.isFocusModeSupported(.autoFocus))  // no auto_focus_start on this camera
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            expectError(.unsupported) { try device.setFocusMode(.autoFocus) }
            #expect(try device.currentFocusMode() == .continuousAutoFocus)
            expectError(.settingInactive) { try device.setLensPosition(0.5) }
            try device.setFocusModeLocked(lensPosition: 0.4)
            #expect(try device.currentFocusMode() == .locked)
            #expect(try device.lensPosition == 0.4)
            // focus_absolute runs 0…250 and larger values focus closer: 0.4 of the way from the
            // closest is 150.
            #expect(try device.value(of: .focusAbsolute) == 150)
            try device.setLensPosition(0)
            #expect(try device.value(of: .focusAbsolute) == 250)
            expectError(.valueOutOfRange) { try device.setLensPosition(1.5) }
            try device.setFocusMode(.continuousAutoFocus)
            #expect(try device.currentFocusMode() == .continuousAutoFocus)
            #expect(try device.controlDescription(.focusAbsolute)?.isInactive == true)
        }

        @Test func exposure() throws {
            #expect(device.isExposureModeSupported(.continuousAutoExposure))
            #expect(device.isExposureModeSupported(.custom))
            #expect(device.isExposureModeSupported(.locked))
            #expect(!device.isExposureModeSupported(.autoExpose))
            #expect(try device.currentExposureMode() == .continuousAutoExposure)
            #expect(try device.minExposureDuration == MediaTime(value: 300, timescale: 1_000_000))
            #expect(try device.maxExposureDuration == MediaTime(value: 204_700, timescale: 1_000_000))
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            // In auto exposure the camera owns duration and gain.
            expectError(.settingInactive) { try device.setExposureDuration(MediaTime(value: 1, timescale: 100)) }
            expectError(.settingInactive) { try device.setISO(400) }
            // ...and the bias applies.
            #expect(try device.minExposureTargetBias == -2 && device.maxExposureTargetBias == 2)
            try device.setExposureTargetBias(0.5)
            #expect(try device.exposureTargetBias == 0.5)
            #expect(try device.value(of: .autoExposureBias) == 5)
            try device.setExposureTargetBias(-1.4)  // the nearest step
            #expect(try device.exposureTargetBias == -1.5)
            expectError(.valueOutOfRange) { try device.setExposureTargetBias(3) }

            try device.setExposureModeCustom(duration: MediaTime(value: 1, timescale: 100), iso: 400)
            #expect(try device.currentExposureMode() == .custom)
            #expect(try device.value(of: .exposureAuto) == 1)
            // 10 ms is 100 units of 100 µs.
            #expect(try device.value(of: .exposureAbsolute) == 100)
            #expect(try device.exposureDuration == MediaTime(value: 10_000, timescale: 1_000_000))
            // Gain 0…255 maps onto ISO 100…1600: ISO 400 is gain 51.
            #expect(try device.value(of: .gain) == 51)
            #expect(try device.iso == 400)
            expectError(.valueOutOfRange) { try device.setExposureDuration(MediaTime(value: 1, timescale: 1)) }
            expectError(.valueOutOfRange) { try device.setISO(3200) }
            expectError(.settingInactive) { try device.setExposureTargetBias(0) }
            try device.setExposureMode(.locked)
            #expect(try device.currentExposureMode() == .locked)
            try device.setExposureMode(.continuousAutoExposure)
            #expect(try device.value(of: .exposureAuto) == 3)  // aperture priority: UVC's auto
        }

        @Test func whiteBalance() throws {
            #expect(device.isWhiteBalanceModeSupported(.continuousAutoWhiteBalance))
            #expect(device.isWhiteBalanceModeSupported(.locked))
            #expect(!device.isWhiteBalanceModeSupported(.autoWhiteBalance))
            #expect(try device.currentWhiteBalanceMode() == .continuousAutoWhiteBalance)
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            expectError(.settingInactive) { try device.setWhiteBalanceTemperature(5000) }
            try device.setWhiteBalanceModeLocked(temperature: 5000)
            #expect(try device.currentWhiteBalanceMode() == .locked)
            #expect(try device.whiteBalanceTemperature == 5000)
            expectError(.valueOutOfRange) { try device.setWhiteBalanceTemperature(9000) }
            try device.setWhiteBalanceMode(.continuousAutoWhiteBalance)
            #expect(try device.value(of: .autoWhiteBalance) == 1)
        }

        /// The settable properties of an AVFoundation app (issue #32, row 6 and its neighbours).
        @Test func modesAndZoomAreSettableProperties() throws {
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            device.exposureMode = .locked
            #expect(device.exposureMode == .locked)
            device.whiteBalanceMode = .locked
            #expect(device.whiteBalanceMode == .locked)
            device.videoZoomFactor = 2.5
            #expect(device.videoZoomFactor == 2.5)
            #expect(try device.value(of: .zoomAbsolute) == 250)
            #expect(device.minAvailableVideoZoomFactor == 1 && device.maxAvailableVideoZoomFactor == 5)
            // A device without a torch reads as off, as AVFoundation's does.
            #expect(!device.hasTorch && device.torchMode == .off)
        }

        @Test func zoom() throws {
            #expect(try device.currentVideoZoomFactor() == 1)
            #expect(device.maxAvailableVideoZoomFactor == 5)
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            try device.setVideoZoomFactor(2.5)
            #expect(try device.currentVideoZoomFactor() == 2.5)
            #expect(try device.value(of: .zoomAbsolute) == 250)
            expectError(.valueOutOfRange) { try device.setVideoZoomFactor(6) }
            expectError(.valueOutOfRange) { try device.setVideoZoomFactor(0.5) }
        }

        @Test func torchIsUnsupportedWithoutFlashControls() throws {
            #expect(!device.hasTorch)
            #expect(!device.isTorchModeSupported(.on))
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            expectError(.unsupported) { try device.setTorchMode(.on) }
            expectError(.unsupported) { _ = try device.currentTorchMode() }
            expectError(.unsupported) { try device.setValue(1, for: .flashLEDMode) }
        }

        @Test func oneShotModesAndTorchWhenTheCameraHasThem() throws {
            V4L2Emulator.setFaults("extra-controls")
            defer { V4L2Emulator.clearFaults() }
            #expect(device.hasTorch)
            #expect(device.isTorchModeSupported(.on) && !device.isTorchModeSupported(.auto))
            #expect(device.isFocusModeSupported(.autoFocus))
            #expect(device.isWhiteBalanceModeSupported(.autoWhiteBalance))
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            #expect(try device.currentTorchMode() == .off)
            try device.setTorchMode(.on)
            #expect(try device.currentTorchMode() == .on)
            #expect(try device.value(of: .flashLEDMode) == 2)
            try device.setTorchMode(.off)
            #expect(try device.value(of: .flashLEDMode) == 0)
            expectError(.unsupported) { try device.setTorchMode(.auto) }
            // The one-shot buttons only work with the continuous mode off, as on real cameras.
            expectError(.settingInactive) { try device.setValue(1, for: .autoFocusStart) }
            try device.setFocusMode(.autoFocus)
            #expect(try device.currentFocusMode() == .locked)
            try device.setWhiteBalanceMode(.autoWhiteBalance)
            #expect(try device.currentWhiteBalanceMode() == .locked)
            let report = try device.v4l2Report()
            #expect(report.controls.first { $0.control == .flashLEDMode }?.menu.map(\.name) == ["Off", "Flash", "Torch"])
            #expect(report.controls.first { $0.control == .autoFocusStart }?.type == "button")
        }

        @Test func controlsChangeWhileStreaming() throws {
            let session = CaptureSession()
            try session.setSessionPreset(.vga640x480)
            try session.addInput(try CaptureDeviceInput(device: device))
            let output = CaptureVideoDataOutput()
            let collector = FrameRecorder(keepsFrames: false)
            output.setSampleBufferDelegate(collector, queue: DispatchQueue(label: "v4l2.controls"))
            try session.addOutput(output)
            try session.startRunning()
            defer { try? session.stopRunning() }
            _ = collector.wait(for: 2)
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            try device.setValue(20, for: .brightness)
            #expect(try device.value(of: .brightness) == 20)
            let before = collector.received
            _ = collector.wait(for: before + 2)
            #expect(collector.received >= before + 2)  // streaming carried on
        }
    }
}

/// Control calls on devices that are not V4L2 cameras fail clearly, with or without the emulator.
@Test func v4l2ControlsOnOtherDevicesAreUnsupported() throws {
    let device = try CaptureDevice(syntheticScene: SyntheticScene(size: .init(width: 64, height: 48)))
    try device.lockForConfiguration()
    defer { device.unlockForConfiguration() }
    do {
        try device.setValue(1, for: .brightness)
        Issue.record("a synthetic camera accepted a V4L2 control")
    } catch {
        #expect(error.code == .unsupported)
    }
    #expect(!device.isFocusModeSupported(.continuousAutoFocus))
    #expect(device.lastNegotiation == nil)
}
