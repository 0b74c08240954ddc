import CV4L2
import CaptureKit
import CaptureKitTesting
import CaptureVision
import Dispatch
import Foundation
import Synchronization
import Testing

/// The real V4L2 backend (libv4l2, ioctls, mmap, poll) against the emulated camera. Serialized:
/// the emulated device, like a real one, has one state shared by every open.
@Suite(.serialized, .emulatedCamera, .enabled(if: V4L2Emulator.isLoaded, Comment(rawValue: V4L2Emulator.skipMessage)))
struct V4L2EmulatorTests {
    init() { V4L2Emulator.clearFaults() }

    // MARK: Discovery and formats

    @Test func discoveryFindsTheCaptureNodeAndSkipsTheMetadataNode() throws {
        let devices = CaptureDevice.DiscoverySession(deviceTypes: [.external], mediaType: .video, position: .unspecified).devices
        let paths = devices.compactMap { $0.source.capabilities?.devicePath }
        #expect(paths.contains(V4L2Emulator.capturePath))
        #expect(!paths.contains(V4L2Emulator.metadataPath))
        let device = try V4L2Emulator.device()
        #expect(try V4L2Emulator.device() === device)  // one object per camera while held
        #expect(device.uniqueID == "v4l2:platform:v4l2-emulator-0")
        #expect(device.localizedName == "Emulated Camera")
        #expect(device.deviceType == .external)
        #expect(device.position == .unspecified)
        #expect(CaptureDevice.default(for: .video) != nil)
        let summary = device.formats.map { "\($0.mediaSubType) \($0.pixelFormat) \($0.dimensions) \($0.videoSupportedFrameRateRanges.map(\.maxFrameRate))" }
        #expect(summary == [
            "YUYV YUYV 640x480 [30.0, 15.0]", "YUYV YUYV 1280x720 [10.0, 5.0]",
            "MJPG BGR 640x480 [30.0, 15.0]", "MJPG BGR 1280x720 [30.0, 15.0]",
        ])
        #expect(throws: CaptureError.self) { try V4L2FrameSource(path: V4L2Emulator.metadataPath) }
        do {
            _ = try V4L2FrameSource(path: V4L2Emulator.metadataPath)
        } catch {
            #expect(error.code == .unsupported)
        }
        #expect(CaptureDevice.authorizationStatus(for: .video) == .authorized)
    }

    // MARK: Photos

    @Test func exposureBracketsUseTheCamerasExposureBiasControl() throws {
        let device = try V4L2Emulator.device()
        let output = CapturePhotoOutput()
        let session = try PhotoTestSupport.runningSession(device, preset: .vga640x480, outputs: [output])
        defer { try? session.stopRunning() }
        #expect(output.maxBracketedCapturePhotoCount == 3)
        let events = PhotoEvents()
        let settings = CapturePhotoSettings(exposureBrackets: [-1, 0, 1])
        try output.capturePhoto(with: settings, delegate: events)
        #expect(events.wait(1))
        #expect(events.stages(of: settings.uniqueID) == PhotoEvents.lifecycle(photos: 3))
        #expect(events.photos.map(\.exposureTargetBias) == [-1, 0, 1])
        #expect(events.finishErrors[settings.uniqueID] == .some(nil))
        // The bracket ends back at no bias, set through the driver's auto_exposure_bias control.
        #expect(try device.exposureTargetBias == 0)
        // A bias the camera cannot take is refused with the full lifecycle.
        let tooFar = CapturePhotoSettings(exposureBrackets: [-5, 0, 5])
        try output.capturePhoto(with: tooFar, delegate: events)
        #expect(events.wait(1))
        #expect(events.finishErrors[tooFar.uniqueID]??.code == .valueOutOfRange)
    }

    @Test func aLargerPhotoSwitchesTheCameraForTheShotAndBack() throws {
        // Every S_FMT (pixel format, width) and STREAMON/STREAMOFF the backend issues.
        let calls = Mutex<[String]>([])
        var system = V4L2SystemCalls.live
        let live = V4L2SystemCalls.live
        system.ioctl = { fd, request, arg in
            let result = live.ioctl(fd, request, arg)
            if request == CV4L2_VIDIOC_S_FMT {
                let pix = arg.assumingMemoryBound(to: v4l2_format.self).pointee.fmt.pix
                let code = String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: pix.pixelformat >> ($0 * 8)) }, as: UTF8.self)
                calls.withLock { $0.append("S_FMT \(code) \(pix.width)x\(pix.height)") }
            } else if request == CV4L2_VIDIOC_STREAMON {
                calls.withLock { $0.append("STREAMON") }
            } else if request == CV4L2_VIDIOC_STREAMOFF {
                calls.withLock { $0.append("STREAMOFF") }
            }
            return result
        }
        let device = try CaptureDevice(v4l2Path: V4L2Emulator.capturePath, system: system)
        let video = CaptureVideoDataOutput()
        let sizes = FrameSizeLog()
        video.setSampleBufferDelegate(sizes, queue: DispatchQueue(label: "v4l2.test"))
        let metadata = CaptureMetadataOutput()
        try metadata.setMetadataObjectTypes([.face])
        let photos = CapturePhotoOutput()
        let session = try PhotoTestSupport.runningSession(device, preset: .vga640x480, outputs: [video, metadata, photos])
        defer { try? session.stopRunning() }
        #expect(sizes.wait(for: 10))
        #expect(photos.maxPhotoDimensions == .init(width: 1280, height: 720))
        #expect(calls.withLock { $0 } == ["S_FMT YUYV 640x480", "STREAMON"])

        // The default (no maxPhotoDimensions) is the active format's size, taken without a switch.
        let events = PhotoEvents()
        let plain = CapturePhotoSettings()
        try photos.capturePhoto(with: plain, delegate: events)
        #expect(events.wait(1))
        #expect(events.photos.last?.resolvedSettings.photoDimensions == .init(width: 640, height: 480))
        #expect(events.photos.last?.pixelBuffer?.width == 640)
        #expect(calls.withLock { $0 } == ["S_FMT YUYV 640x480", "STREAMON"])

        // The largest size: the camera streams MJPEG 1280x720 (30 fps, faster than YUYV's 10)
        // for the shot, then YUYV 640x480 again.
        let folder = try PhotoTestSupport.temporaryFolder("v4l2-still")
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("still.jpg")
        let large = CapturePhotoSettings(maxPhotoDimensions: photos.maxPhotoDimensions, fileURL: url)
        let before = sizes.count
        try photos.capturePhoto(with: large, delegate: events)
        #expect(events.wait(1))
        #expect(events.stages(of: large.uniqueID) == PhotoEvents.lifecycle(photos: 1))
        #expect(events.finishErrors[large.uniqueID] == .some(nil))
        let photo = try #require(events.photos.last)
        #expect(photo.resolvedSettings.photoDimensions == .init(width: 1280, height: 720))
        let pixels = try #require(photo.pixelBuffer)
        #expect(pixels.width == 1280 && pixels.height == 720)
        // A real frame of the still stream: the emulator's first image (shown for 15 frames,
        // and the shot comes after formatSwitchSettleFrameCount of them).
        #expect(try meanDifference(pixels, fixture: v4l2FixtureImages + "/grace_hopper.jpg") < 12)
        // The file decodes at that size with a separate decoder (Pillow).
        let decoded = try PhotoTestSupport.python(
            "import sys\nfrom PIL import Image\nim = Image.open(sys.argv[1]); im.load(); print(im.format, *im.size)", [url.path])
        #expect(decoded.trimmingCharacters(in: .whitespacesAndNewlines) == "JPEG 1280 720")

        // Video keeps flowing afterwards, at the old size; the gap is reported as skipped frames.
        #expect(sizes.wait(for: before + 10))
        try session.stopRunning()
        #expect(calls.withLock { $0 } == [
            "S_FMT YUYV 640x480", "STREAMON", "STREAMOFF", "S_FMT MJPG 1280x720", "STREAMON", "STREAMOFF",
            "S_FMT YUYV 640x480", "STREAMON", "STREAMOFF",
        ])
        let seen = sizes.frames
        #expect(seen.count >= before + 10)
        #expect(seen.allSatisfy { $0.width == 640 && $0.height == 480 })
        #expect(seen.contains { $0.time > photo.timestamp.seconds })
        #expect((video.droppedFrameCounts[.discontinuity] ?? 0) >= CapturePhotoOutput.formatSwitchSettleFrameCount)
        #expect(metadata.sourceSkippedFrameCount >= CapturePhotoOutput.formatSwitchSettleFrameCount)
        #expect(device.activeFormat.dimensions == .init(width: 640, height: 480))
        #expect(device.lastNegotiation?.granted.description == "YUYV 640x480@30")
    }

    @Test func flashOnFiresTheLEDAndPutsThePreviousModeBack() throws {
        V4L2Emulator.setFaults("extra-controls", "control-log")
        let log = V4L2Emulator.controlFile + ".log"
        try? FileManager.default.removeItem(atPath: log)
        defer {
            V4L2Emulator.clearFaults()
            try? FileManager.default.removeItem(atPath: log)
        }
        let device = try V4L2Emulator.device()
        #expect(device.hasFlash)
        // The torch is on before the photo: that is the mode to come back to.
        try device.lockForConfiguration()
        try device.setTorchMode(.on)
        device.unlockForConfiguration()
        let output = CapturePhotoOutput()
        let session = try PhotoTestSupport.runningSession(device, preset: .vga640x480, outputs: [output])
        defer { try? session.stopRunning() }
        #expect(output.supportedFlashModes == [.off, .on])
        let events = PhotoEvents()
        let flash = CapturePhotoSettings(flashMode: .on)
        let auto = CapturePhotoSettings(flashMode: .auto)
        let marker = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").count
        try output.capturePhoto(with: flash, delegate: events)
        #expect(events.wait(1))
        try output.capturePhoto(with: auto, delegate: events)
        #expect(events.wait(1))
        #expect(events.stages(of: flash.uniqueID) == PhotoEvents.lifecycle(photos: 1))
        #expect(events.finishErrors[flash.uniqueID] == .some(nil))
        let photo = try #require(events.photos.first { $0.resolvedSettings.uniqueID == flash.uniqueID })
        #expect(photo.resolvedSettings.isFlashEnabled)
        #expect(photo.pixelBuffer != nil)
        // `.auto` needs a light meter V4L2 does not have.
        #expect(events.finishErrors[auto.uniqueID]??.code == .unsupported)
        try session.stopRunning()

        // What the camera saw: LED mode flash, a strobe, then torch again; the photo's frame
        // started exposing after the strobe and before the mode went back.
        let writes = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").dropFirst(marker).map {
            let f = $0.split(separator: " ")
            return (time: Double(f[0])! / 1e6, control: String(f[1]), value: Int(f[2])!)
        }
        let led = String(format: "0x%08x", CaptureDevice.Control.flashLEDMode.rawValue)
        let strobe = String(format: "0x%08x", CaptureDevice.Control.flashStrobe.rawValue)
        #expect(writes.map { "\($0.control)=\($0.value)" } == ["\(led)=1", "\(strobe)=1", "\(led)=2"])
        if writes.count == 3 {
            #expect(writes[1].time <= photo.timestamp.seconds)
            #expect(photo.timestamp.seconds <= writes[2].time)
        }
        #expect(try device.currentTorchMode() == .on)
        try device.lockForConfiguration()
        try device.setTorchMode(.off)
        device.unlockForConfiguration()

        // The same camera without a flash: `.on` is refused as unsupported.
        V4L2Emulator.clearFaults()
        #expect(!device.hasFlash)
        let noFlash = CapturePhotoOutput()
        let plain = try PhotoTestSupport.runningSession(device, preset: .vga640x480, outputs: [noFlash])
        defer { try? plain.stopRunning() }
        #expect(noFlash.supportedFlashModes == [.off])
        let refused = CapturePhotoSettings(flashMode: .on)
        try noFlash.capturePhoto(with: refused, delegate: events)
        #expect(events.wait(1))
        #expect(events.finishErrors[refused.uniqueID]??.code == .unsupported)
        #expect(events.stages(of: refused.uniqueID) == PhotoEvents.lifecycle(photos: 1))
    }

    @Test func aFailingSwitchOrStrobeEndsThePhotoWithAnErrorAndVideoGoesOn() throws {
        // The driver refuses the still size (S_FMT to 1280 wide) and the strobe (S_CTRL).
        V4L2Emulator.setFaults("extra-controls")
        defer { V4L2Emulator.clearFaults() }
        var system = V4L2SystemCalls.live
        let live = V4L2SystemCalls.live
        system.ioctl = { fd, request, arg in
            if request == CV4L2_VIDIOC_S_FMT && arg.assumingMemoryBound(to: v4l2_format.self).pointee.fmt.pix.width == 1280 {
                errno = EIO
                return -1
            }
            if request == CV4L2_VIDIOC_S_CTRL
                && arg.assumingMemoryBound(to: v4l2_control.self).pointee.id == CaptureDevice.Control.flashStrobe.rawValue
            {
                errno = EIO
                return -1
            }
            return live.ioctl(fd, request, arg)
        }
        let device = try CaptureDevice(v4l2Path: V4L2Emulator.capturePath, system: system)
        let video = CaptureVideoDataOutput()
        let sizes = FrameSizeLog()
        video.setSampleBufferDelegate(sizes, queue: DispatchQueue(label: "v4l2.test"))
        let photos = CapturePhotoOutput()
        let session = try PhotoTestSupport.runningSession(device, preset: .vga640x480, outputs: [video, photos])
        defer { try? session.stopRunning() }
        #expect(sizes.wait(for: 5))
        let events = PhotoEvents()
        let large = CapturePhotoSettings(maxPhotoDimensions: .init(width: 1280, height: 720))
        try photos.capturePhoto(with: large, delegate: events)
        #expect(events.wait(1))
        #expect(events.stages(of: large.uniqueID) == PhotoEvents.lifecycle(photos: 1))
        #expect(events.finishErrors[large.uniqueID]??.message.contains("1280x720") == true)
        let before = sizes.count
        #expect(sizes.wait(for: before + 5))
        #expect(session.isRunning)

        let flash = CapturePhotoSettings(flashMode: .on)
        try photos.capturePhoto(with: flash, delegate: events)
        #expect(events.wait(1))
        #expect(events.stages(of: flash.uniqueID) == PhotoEvents.lifecycle(photos: 1))
        #expect(events.finishErrors[flash.uniqueID]??.errno == EIO)
        #expect(try device.value(of: .flashLEDMode) == 0)  // back to off after the failed strobe
        #expect(sizes.frames.allSatisfy { $0.width == 640 })
    }

    @Test func negotiationReportsWhatTheDriverAdjusted() throws {
        let source = try V4L2FrameSource(path: V4L2Emulator.capturePath)
        // 800x600 at 60 fps does not exist: the driver answers with 640x480 at 30 fps.
        let odd = CaptureDevice.Format(
            mediaSubType: "YUYV", pixelFormat: .yuyv, dimensions: .init(width: 800, height: 600),
            videoSupportedFrameRateRanges: [.init(framesPerSecond: 60)])
        try source.open(format: odd, frameDuration: MediaTime(value: 1, timescale: 60))
        let frame = try #require(try source.nextFrame(isCancelled: { false }))
        source.close()
        let n = try #require(source.lastNegotiation)
        #expect(n.requested.description == "YUYV 800x600@60")
        #expect(n.granted.description == "YUYV 640x480@30")
        #expect(n.wasAdjusted)
        #expect(frame.pixelBuffer.width == 640 && frame.pixelBuffer.height == 480)
        #expect(frame.pixelBuffer.pixelFormat == .yuyv)

        // A supported request comes back unchanged, slower rate included.
        let mjpeg = try #require(source.formats.first { $0.mediaSubType == "MJPG" && $0.dimensions.width == 1280 })
        try source.open(format: mjpeg, frameDuration: MediaTime(value: 1, timescale: 15))
        let decoded = try #require(try source.nextFrame(isCancelled: { false }))
        source.close()
        #expect(source.lastNegotiation?.wasAdjusted == false)
        #expect(source.lastNegotiation?.granted.description == "MJPG 1280x720@15")
        #expect(decoded.pixelBuffer.pixelFormat == .bgr && decoded.pixelBuffer.width == 1280)
    }

    // MARK: Streaming through a session

    @Test(arguments: [("YUYV", 640), ("YUYV", 1280), ("MJPG", 640), ("MJPG", 1280)])
    func capturesFramesThroughASessionAsBGR(fourCC: String, width: Int) throws {
        let (device, format, frames) = try sessionFrames(fourCC: fourCC, width: width)
        let height = width == 640 ? 480 : 720
        for frame in frames {
            #expect(frame.width == width && frame.height == height)
            #expect(frame.pixelFormat == .bgr)
        }
        for (a, b) in zip(frames, frames.dropFirst()) {
            #expect(b.presentationTimeStamp > a.presentationTimeStamp)
            #expect(b.sequenceNumber > a.sequenceNumber)
        }
        // The driver's timestamps are on the monotonic clock, a frame interval apart.
        let interval = format.minFrameDuration!.seconds
        let spacing = frames[1].presentationTimeStamp.seconds - frames[0].presentationTimeStamp.seconds
        #expect(abs(spacing - interval * Double(frames[1].sequenceNumber - frames[0].sequenceNumber)) < 0.002)
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        #expect(frames[0].presentationTimeStamp.seconds <= Double(now.tv_sec) + Double(now.tv_nsec) / 1e9)
        // The pixels are the first fixture (sorted by name), through YUYV or JPEG and back.
        let first = try #require(frames.first { $0.sequenceNumber < 15 })
        let same = try meanDifference(first.pixelBuffer, fixture: v4l2FixtureImages + "/grace_hopper.jpg")
        let other = try meanDifference(first.pixelBuffer, fixture: v4l2FixtureImages + "/maksssksksss14.jpg")
        #expect(same < 12, "mean difference to the source image \(same)")
        #expect(other > same * 2, "a different image must differ more (\(other) vs \(same))")
        #expect(device.lastNegotiation?.wasAdjusted == false)
    }

    /// Frames from a session on the emulated camera in `fourCC` at `width`, with the video
    /// connection rotated and mirrored as given; the device and the format it streamed in.
    private func sessionFrames(
        fourCC: String, width: Int, rotation: Double = 0, mirrored: Bool = false, count: Int = 6
    ) throws -> (device: CaptureDevice, format: CaptureDevice.Format, frames: [SampleBuffer]) {
        let device = try V4L2Emulator.device()
        let format = try #require(device.formats.first { $0.mediaSubType == fourCC && $0.dimensions.width == width })
        try device.lockForConfiguration()
        try device.setActiveFormat(format)
        device.unlockForConfiguration()
        let session = CaptureSession()
        session.beginConfiguration()
        try session.setSessionPreset(.inputPriority)
        try session.addInput(try CaptureDeviceInput(device: device))
        let output = CaptureVideoDataOutput()
        output.alwaysDiscardsLateVideoFrames = false
        let collector = FrameRecorder()
        output.setSampleBufferDelegate(collector, queue: DispatchQueue(label: "v4l2.test"))
        try session.addOutput(output)
        try session.commitConfiguration()
        let connection = try #require(output.connection(with: .video))
        connection.videoRotationAngle = rotation
        connection.isVideoMirrored = mirrored
        try session.startRunning()
        let frames = collector.wait(for: count)
        try session.stopRunning()
        try #require(frames.count >= count)
        #expect(device.lastNegotiation?.granted.fourCC == fourCC)
        return (device, format, frames)
    }

    @Test(arguments: [640, 1280])
    func mjpegFramesCarryTheCamerasJPEG(width: Int) throws {
        let frames = try sessionFrames(fourCC: "MJPG", width: width).frames
        for frame in frames {
            let jpeg = try #require(frame.jpegData, "frame \(frame.sequenceNumber) has no JPEG")
            // One whole JPEG as the emulator wrote it into the buffer (bytesused, no padding).
            #expect(Array(jpeg.prefix(2)) == [0xFF, 0xD8] && Array(jpeg.suffix(2)) == [0xFF, 0xD9])
            // The bytes are the very ones the pixels were decoded from.
            let decoded = try PixelBuffer(width: frame.width, height: frame.height, pixelFormat: .bgr)
            try jpeg.withUnsafeBytes { try Imaging.decode($0, into: decoded, "decoding the kept JPEG") }
            #expect(decoded.packedBytes() == frame.pixelBuffer.packedBytes())
        }
        // The first fixture (sorted by name), as in capturesFramesThroughASessionAsBGR.
        let first = try #require(frames.first { $0.sequenceNumber < 15 })
        #expect(try meanDifference(first.pixelBuffer, fixture: v4l2FixtureImages + "/grace_hopper.jpg") < 12)
    }

    @Test func rotatedMirroredOrUncompressedFramesCarryNoJPEG() throws {
        #expect(try sessionFrames(fourCC: "MJPG", width: 640, rotation: 90).frames.allSatisfy { $0.jpegData == nil && $0.width == 480 })
        #expect(try sessionFrames(fourCC: "MJPG", width: 640, mirrored: true).frames.allSatisfy { $0.jpegData == nil })
        #expect(try sessionFrames(fourCC: "YUYV", width: 640).frames.allSatisfy { $0.jpegData == nil })
    }

    @Test func heldFramesNeverStarveTheDriver() throws {
        // A consumer that keeps every native YUYV frame: the first frames wrap mmap buffers
        // (zero copy); once only two buffers would be left with the driver, frames are copies.
        let device = try V4L2Emulator.device()
        let output = CaptureVideoDataOutput()
        output.videoPixelFormat = nil
        output.alwaysDiscardsLateVideoFrames = false
        let collector = FrameRecorder()
        output.setSampleBufferDelegate(collector, queue: DispatchQueue(label: "v4l2.test"))
        let session = try PhotoTestSupport.runningSession(device, preset: .vga640x480, outputs: [output])
        let frames = collector.wait(for: 10)
        let maps = V4L2Emulator.processMaps()
        try session.stopRunning()
        let mapped: [ClosedRange<UInt>] = maps.split(separator: "\n").filter { $0.contains("video-emulated0") }.compactMap {
            let bounds = $0.split(separator: " ")[0].split(separator: "-").compactMap { UInt($0, radix: 16) }
            return bounds.count == 2 ? bounds[0]...(bounds[1] - 1) : nil
        }
        func isMapped(_ f: SampleBuffer) -> Bool {
            let address = UInt(bitPattern: f.pixelBuffer.baseAddress)
            return mapped.contains { $0.contains(address) }
        }
        #expect(frames.count >= 10)
        #expect(frames.allSatisfy { $0.pixelFormat == .yuyv && $0.width == 640 })
        #expect(frames.prefix(4).allSatisfy(isMapped))
        #expect(frames.dropFirst(4).allSatisfy { !isMapped($0) })
        #expect(Set(frames.map(\.sequenceNumber)).count == frames.count)
        // A copy holds the same pixels a mapped frame of the same image does.
        if let copy = frames.dropFirst(4).first(where: { $0.sequenceNumber < 15 }) {
            #expect(copy.pixelBuffer.packedBytes() == frames[0].pixelBuffer.packedBytes())
        }
    }

    @Test func framesTheDriverLostAreReportedAsDiscontinuities() throws {
        // A capture thread that falls behind (each DQBUF delayed by 3 frame intervals): the
        // driver runs out of queued buffers and loses frames, its sequence numbers jump, and the
        // session reports the gap as drops with reason `discontinuity`.
        var system = V4L2SystemCalls.live
        let live = V4L2SystemCalls.live
        system.ioctl = { fd, request, arg in
            if request == CV4L2_VIDIOC_DQBUF { Thread.sleep(forTimeInterval: 0.1) }
            return live.ioctl(fd, request, arg)
        }
        let device = try CaptureDevice(v4l2Path: V4L2Emulator.capturePath, system: system)
        let output = CaptureVideoDataOutput()
        let collector = FrameRecorder()
        output.setSampleBufferDelegate(collector, queue: DispatchQueue(label: "v4l2.test"))
        let session = try PhotoTestSupport.runningSession(device, preset: .vga640x480, outputs: [output])
        let frames = collector.wait(for: 12)
        try session.stopRunning()
        let sequences = frames.map(\.sequenceNumber)
        #expect(zip(sequences, sequences.dropFirst()).contains { $1 > $0 + 1 }, "sequences \(sequences)")
        #expect((output.droppedFrameCounts[.discontinuity] ?? 0) > 0)
    }

    @Test func presetHighPrefersMJPEGAtFullRate() throws {
        let device = try V4L2Emulator.device()
        let output = CaptureVideoDataOutput()
        let collector = FrameRecorder()
        output.setSampleBufferDelegate(collector, queue: DispatchQueue(label: "v4l2.test"))
        let session = try PhotoTestSupport.runningSession(device, preset: .hd1280x720, outputs: [output])
        _ = collector.wait(for: 2)
        try session.stopRunning()
        // YUYV reaches only 10 fps at 1280x720; MJPEG reaches 30.
        #expect(device.lastNegotiation?.granted.description == "MJPG 1280x720@30")
        #expect(device.activeFormat.mediaSubType == "MJPG")
    }

    // MARK: Faults

    @Test func unplugMidStreamInterruptsTheSessionAndStopsCleanly() async throws {
        let device = try V4L2Emulator.device()
        let session = CaptureSession()
        try session.setSessionPreset(.vga640x480)
        try session.addInput(try CaptureDeviceInput(device: device))
        let output = CaptureVideoDataOutput()
        let collector = FrameRecorder(keepsFrames: false)
        output.setSampleBufferDelegate(collector, queue: DispatchQueue(label: "v4l2.test"))
        try session.addOutput(output)
        let events = session.events()
        V4L2Emulator.setFaults("unplug-after 5")
        defer { V4L2Emulator.clearFaults() }
        try session.startRunning()
        let interrupted = await nextEvent(events) { if case .wasInterrupted = $0 { true } else { false } }
        guard case .wasInterrupted(let error) = interrupted else {
            Issue.record("no interruption after the camera was unplugged")
            try session.stopRunning()
            return
        }
        #expect(error.code == .deviceDisconnected)
        #expect(session.isInterrupted)
        #expect(collector.received >= 4)
        // The node is gone while unplugged.
        #expect(access(V4L2Emulator.capturePath, F_OK) != 0)
        // Plugged back in: the runner reopens the camera and the interruption ends.
        V4L2Emulator.clearFaults()
        let ended = await nextEvent(events) { if case .interruptionEnded = $0 { true } else { false } }
        #expect(ended != nil)
        #expect(session.isRunning)
        try session.stopRunning()
        #expect(!session.isRunning)
        #expect(V4L2Emulator.openResources().descriptors == 0)
    }

    /// A setting made with AVFoundation's spelling on a camera that was unplugged after the
    /// app's check is a run-time failure: a `.warning` event of the session, never a trap.
    @Test func aPropertySetOnAnUnpluggedCameraIsAWarningNotATrap() async throws {
        let device = try V4L2Emulator.device()
        let session = CaptureSession()
        try session.setSessionPreset(.vga640x480)
        try session.addInput(try CaptureDeviceInput(device: device))
        let output = CaptureVideoDataOutput()
        output.setSampleBufferDelegate(FrameRecorder(keepsFrames: false), queue: DispatchQueue(label: "v4l2.test"))
        try session.addOutput(output)
        #expect(device.isFocusModeSupported(.continuousAutoFocus))
        let events = session.events()
        V4L2Emulator.setFaults("unplug-after 5")
        defer { V4L2Emulator.clearFaults() }
        try session.startRunning()
        let interrupted = await nextEvent(events) { if case .wasInterrupted = $0 { true } else { false } }
        #expect(interrupted != nil)
        try device.lockForConfiguration()
        device.focusMode = .continuousAutoFocus
        device.unlockForConfiguration()
        let warning = await nextEvent(events) { if case .warning = $0 { true } else { false } }
        guard case .warning(let error) = warning else {
            Issue.record("no warning for the refused setting: \(String(describing: warning))")
            try session.stopRunning()
            return
        }
        #expect(error.message.contains(device.localizedName), "\(error)")
        try session.stopRunning()
    }

    @Test func aDeviceBusyElsewhereGivesDeviceBusy() throws {
        let device = try V4L2Emulator.device()
        // Another process holds the node (the emulator refuses opens as a busy driver does).
        V4L2Emulator.setFaults("busy")
        defer { V4L2Emulator.clearFaults() }
        do {
            _ = try CaptureDevice(v4l2Path: V4L2Emulator.capturePath)
            Issue.record("opening a busy camera succeeded")
        } catch {
            #expect(error.code == .deviceBusy)
            #expect(error.errno == EBUSY)
            #expect(error.message.contains("in use by another process"))
        }
        let session = CaptureSession()
        try session.addInput(try CaptureDeviceInput(device: device))
        #expect(throws: CaptureError.self) { try session.startRunning() }
        V4L2Emulator.clearFaults()

        // Within one process: a second stream on a streaming node is refused at REQBUFS.
        let first = try V4L2FrameSource(path: V4L2Emulator.capturePath)
        let second = try V4L2FrameSource(path: V4L2Emulator.capturePath)
        try first.open(format: first.formats[0], frameDuration: first.formats[0].minFrameDuration!)
        defer { first.close() }
        do {
            try second.open(format: second.formats[0], frameDuration: second.formats[0].minFrameDuration!)
            Issue.record("a second stream on a busy camera started")
        } catch {
            #expect(error.code == .deviceBusy)
        }
        second.close()
    }

    @Test func permissionDeniedSaysWhichGroupToJoin() throws {
        V4L2Emulator.setFaults("eacces")
        defer { V4L2Emulator.clearFaults() }
        do {
            _ = try CaptureDevice(v4l2Path: V4L2Emulator.capturePath)
            Issue.record("opening a camera without permission succeeded")
        } catch {
            #expect(error.code == .permissionDenied)
            #expect(error.errno == EACCES)
            #expect(error.message.contains("`video` group"))
        }
        // Only the emulated nodes: a machine's real /dev/video* would answer for itself.
        var onlyEmulated = V4L2SystemCalls.live
        onlyEmulated.listDirectory = { _ in [] }
        #expect(CaptureDevice.authorizationStatus(for: .video, system: onlyEmulated) == .denied)
        V4L2Emulator.clearFaults()
        #expect(CaptureDevice.authorizationStatus(for: .video, system: onlyEmulated) == .authorized)
    }

    @Test func noDescriptorOrMappingLeaksAfter100StartStopCycles() throws {
        let device = try V4L2Emulator.device()
        let before = V4L2Emulator.openResources()
        #expect(before.descriptors == 0 && before.mappings == 0)
        let session = CaptureSession()
        try session.setSessionPreset(.vga640x480)
        try session.addInput(try CaptureDeviceInput(device: device))
        let output = CaptureVideoDataOutput()
        output.videoPixelFormat = nil  // native YUYV: frames wrap the mmap buffers themselves
        let collector = FrameRecorder(keepsFrames: false)
        output.setSampleBufferDelegate(collector, queue: DispatchQueue(label: "v4l2.test"))
        try session.addOutput(output)
        var peak = (descriptors: 0, mappings: 0)
        for cycle in 1...100 {
            try session.startRunning()
            _ = collector.wait(for: cycle)
            let during = V4L2Emulator.openResources()
            peak = (max(peak.descriptors, during.descriptors), max(peak.mappings, during.mappings))
            try session.stopRunning()
        }
        #expect(collector.received >= 100)
        #expect(peak.descriptors >= 1 && peak.mappings >= 6)  // the count sees streaming
        // Frames still queued for the delegate hold their buffers until delivered.
        var after = V4L2Emulator.openResources()
        for _ in 0..<100 where after.mappings > 0 || after.descriptors > 0 {
            Thread.sleep(forTimeInterval: 0.02)
            after = V4L2Emulator.openResources()
        }
        #expect(after.descriptors == 0)
        #expect(after.mappings == 0)
        #expect(after.allDescriptors <= before.allDescriptors + 2)
    }

    // MARK: The syscall seam

    @Test func theSeamSeesTheStreamingSequenceAndRetriesEINTR() throws {
        let log = Mutex<[UInt]>([])
        let interrupted = Atomic<Bool>(false)
        var system = V4L2SystemCalls.live
        let live = V4L2SystemCalls.live
        var mapCount = 0
        let maps = Mutex(0)
        system.ioctl = { fd, request, arg in
            log.withLock { $0.append(request) }
            // The first DQBUF is interrupted by a signal; the backend must try again.
            if request == CV4L2_VIDIOC_DQBUF && !interrupted.exchange(true, ordering: .relaxed) {
                errno = EINTR
                return -1
            }
            return live.ioctl(fd, request, arg)
        }
        system.mmap = { fd, length, offset in
            maps.withLock { $0 += 1 }
            return live.mmap(fd, length, offset)
        }
        let source = try V4L2FrameSource(path: V4L2Emulator.capturePath, system: system)
        log.withLock { $0.removeAll() }
        try source.open(format: source.formats[0], frameDuration: source.formats[0].minFrameDuration!)
        let frame = try source.nextFrame(isCancelled: { false })
        source.close()
        mapCount = maps.withLock { $0 }
        #expect(frame != nil)
        let calls = log.withLock { $0 }
        func first(_ r: UInt) -> Int { calls.firstIndex(of: r) ?? -1 }
        #expect(first(CV4L2_VIDIOC_S_FMT) == 0)
        #expect(first(CV4L2_VIDIOC_S_PARM) == 1)
        #expect(first(CV4L2_VIDIOC_REQBUFS) == 2)
        #expect(calls.filter { $0 == CV4L2_VIDIOC_QUERYBUF }.count == mapCount)
        #expect(first(CV4L2_VIDIOC_STREAMON) > first(CV4L2_VIDIOC_QBUF))
        #expect(calls.filter { $0 == CV4L2_VIDIOC_DQBUF }.count >= 2)  // the interrupted one and its retry
        #expect(calls.last == CV4L2_VIDIOC_STREAMOFF)
    }

    @Test func anInjectedENODEVBecomesDeviceDisconnected() throws {
        var system = V4L2SystemCalls.live
        let live = V4L2SystemCalls.live
        let dequeued = Atomic<Int>(0)
        system.ioctl = { fd, request, arg in
            if request == CV4L2_VIDIOC_DQBUF && dequeued.add(1, ordering: .relaxed).newValue > 3 {
                errno = ENODEV
                return -1
            }
            return live.ioctl(fd, request, arg)
        }
        let source = try V4L2FrameSource(path: V4L2Emulator.capturePath, system: system)
        try source.open(format: source.formats[0], frameDuration: source.formats[0].minFrameDuration!)
        defer { source.close() }
        for _ in 0..<3 { #expect(try source.nextFrame(isCancelled: { false }) != nil) }
        do {
            _ = try source.nextFrame(isCancelled: { false })
            Issue.record("an unplugged camera delivered a frame")
        } catch {
            #expect(error.code == .deviceDisconnected)
            #expect(error.errno == ENODEV)
        }
    }

    @Test func cancellationIsNoticedWhileFramesAreSlow() throws {
        V4L2Emulator.setFaults("slow 5000")
        defer { V4L2Emulator.clearFaults() }
        let source = try V4L2FrameSource(path: V4L2Emulator.capturePath)
        try source.open(format: source.formats[0], frameDuration: source.formats[0].minFrameDuration!)
        defer { source.close() }
        let polls = Atomic<Int>(0)
        let frame = try source.nextFrame(isCancelled: { polls.add(1, ordering: .relaxed).newValue > 3 })
        #expect(frame == nil)
        #expect(polls.load(ordering: .relaxed) == 4)
    }

    // MARK: Hot plug

    @Test func deviceChangesReportUnplugAndReplug() async throws {
        let changes = CaptureDevice.deviceChanges(pollInterval: 0.1)
        var iterator = changes.makeAsyncIterator()
        var connected: [String] = []
        while let change = await iterator.next() {
            if case .connected(let device) = change { connected.append(device.uniqueID) }
            if connected.contains("v4l2:platform:v4l2-emulator-0") { break }
        }
        #expect(connected.contains("v4l2:platform:v4l2-emulator-0"))
        // Unplug by streaming past the fault, then plug back in.
        V4L2Emulator.setFaults("unplug-after 2")
        let source = try V4L2FrameSource(path: V4L2Emulator.capturePath)
        try source.open(format: source.formats[0], frameDuration: source.formats[0].minFrameDuration!)
        #expect(throws: CaptureError.self) {
            for _ in 0..<10 { _ = try source.nextFrame(isCancelled: { false }) }
        }
        source.close()
        var sawDisconnect = false
        while let change = await iterator.next() {
            if case .disconnected(let id) = change, id == "v4l2:platform:v4l2-emulator-0" { sawDisconnect = true; break }
        }
        #expect(sawDisconnect)
        V4L2Emulator.clearFaults()
        _ = try? V4L2FrameSource(path: V4L2Emulator.capturePath)  // the next open notices the replug
        var sawConnect = false
        while let change = await iterator.next() {
            if case .connected(let device) = change, device.uniqueID == "v4l2:platform:v4l2-emulator-0" { sawConnect = true; break }
        }
        #expect(sawConnect)
    }

    // MARK: Report

    @Test func reportListsFormatsIntervalsAndControlsAsTextAndJSON() throws {
        let device = try V4L2Emulator.device()
        try V4L2Emulator.resetControls(device)
        let report = try V4L2DeviceReport(path: V4L2Emulator.capturePath)
        #expect(report.card == "Emulated Camera")
        #expect(report.busInfo == "platform:v4l2-emulator-0")
        #expect(report.deviceCapabilities.contains("video-capture") && report.deviceCapabilities.contains("streaming"))
        #expect(report.formats.map(\.fourCC) == ["YUYV", "MJPG"])
        #expect(report.formats[1].isCompressed)
        #expect(report.formats[0].sizes.map { "\($0.width)x\($0.height) \($0.intervals)" } == [
            "640x480 [\"1/30\", \"1/15\"]", "1280x720 [\"1/10\", \"1/5\"]",
        ])
        #expect(report.controls.count == 16)
        // The region of interest: compound, so listed only with V4L2_CTRL_FLAG_NEXT_COMPOUND, and
        // never read with VIDIOC_G_CTRL (no value).
        let region = try #require(report.controls.first { $0.control == .regionOfInterestRect })
        #expect(region.type == "rect" && region.value == nil && region.flags == ["has-payload", "has-min-max"])
        #expect(region.v4l2Name == "region_of_interest_rectangle")
        let regionAuto = try #require(report.controls.first { $0.control == .regionOfInterestAuto })
        #expect(regionAuto.type == "bitmask" && regionAuto.maximum == 0xff && regionAuto.value != nil)
        let exposure = try #require(report.controls.first { $0.control == .exposureAuto })
        #expect(exposure.type == "menu")
        #expect(exposure.menu.map(\.index) == [1, 3])
        #expect(exposure.menu.map(\.name) == ["Manual Mode", "Aperture Priority Mode"])
        let time = try #require(report.controls.first { $0.control == .exposureAbsolute })
        #expect(time.minimum == 3 && time.maximum == 2047 && time.defaultValue == 166 && time.value == 166)
        #expect(time.flags == ["inactive"])
        let bias = try #require(report.controls.first { $0.control == .autoExposureBias })
        #expect(bias.type == "intmenu" && bias.menu.compactMap(\.value) == [-2000, -1500, -1000, -500, 0, 500, 1000, 1500, 2000])
        let text = report.text
        #expect(text.contains("[1]: 'MJPG' (Motion-JPEG, compressed)"))
        #expect(text.contains("Size: Discrete 1280x720"))
        #expect(text.contains("Interval: Discrete 1/30 s (30 fps)"))
        #expect(text.contains("exposure_time_absolute 0x009a0902 (int) : min=3 max=2047 step=1 default=166 value=166 flags=inactive"))
        #expect(text.contains("\t\t3: Aperture Priority Mode"))
        #expect(text.contains("region_of_interest_rectangle 0x00981ae1 (rect) flags=has-payload, has-min-max\n"))
        let json = try JSONEncoder().encode(report)
        #expect(try JSONDecoder().decode(V4L2DeviceReport.self, from: json) == report)
        #expect(try device.v4l2Report() == report)
    }
}

/// Records the size and time of every delivered frame (not the frames: no buffer stays held).
final class FrameSizeLog: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    // @unchecked: all state is behind `lock`.
    private let lock = NSCondition()
    private var seen: [(width: Int, height: Int, time: Double)] = []

    func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
        lock.lock()
        seen.append((sampleBuffer.width, sampleBuffer.height, sampleBuffer.presentationTimeStamp.seconds))
        lock.broadcast()
        lock.unlock()
    }

    var frames: [(width: Int, height: Int, time: Double)] { lock.withLock { seen } }
    var count: Int { lock.withLock { seen.count } }

    /// Waits until `n` frames arrived (at most 20 s); returns whether they did.
    func wait(for n: Int) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 20)
        lock.lock()
        defer { lock.unlock() }
        while seen.count < n && lock.wait(until: deadline) {}
        return seen.count >= n
    }
}
