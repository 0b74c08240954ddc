@testable import CaptureKit
@testable import CaptureVision
import CaptureKitTesting
import CVBridge
import Dispatch
import Foundation
import Testing

/// A camera double whose exposure bias changes the brightness of its frames, `late` frames
/// after it is set (like a driver with frames in flight): it lets bracketed captures run
/// without hardware.
final class BracketingCamera: ExposureBracketingSource, @unchecked Sendable {
    // @unchecked: touched only on the capture thread (FrameSource's rule) after init.
    let formats = [
        CaptureDevice.Format(
            mediaSubType: "TEST", pixelFormat: .bgr, dimensions: .init(width: 160, height: 120),
            videoSupportedFrameRateRanges: [.init(framesPerSecond: 30)])
    ]
    let isLive = false
    let pacing = FramePacing.realTime
    let exposureTargetBiasRange: ClosedRange<Float> = -2...2
    let late = 2
    private var index: UInt64 = 0
    private var biasSchedule: [(from: UInt64, bias: Float)] = [(0, 0)]
    private(set) var biasCalls: [Float] = []

    func open(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) { index = 0 }
    func nextFrame(isCancelled: @Sendable () -> Bool) throws(CaptureError) -> SourceFrame? {
        let bias = biasSchedule.last { $0.from <= index }?.bias ?? 0
        let buffer = try PixelBuffer(width: 160, height: 120, pixelFormat: .bgr)
        var err = cvb_error()
        let level = UInt8(max(0, min(255, 80 * pow(2, Double(bias)))))
        _ = buffer.withBridgeImage { cvb_image_fill(&$0, level, level, level, &err) }
        defer { index += 1 }
        return SourceFrame(pixelBuffer: buffer, presentationTimeStamp: MediaTime(value: Int64(index), timescale: 30), sequenceNumber: index)
    }
    func close() {}
    func setExposureTargetBias(_ bias: Float) throws(CaptureError) -> Int {
        biasCalls.append(bias)
        // `index` is the next frame to be produced; frames already delivered are past.
        biasSchedule.append((index + UInt64(late), bias))
        return late
    }
}

/// A live camera that never delivers a frame until it is stopped: captures stay pending.
final class SilentCamera: FrameSource, @unchecked Sendable {
    // @unchecked: no mutable state.
    let formats = [
        CaptureDevice.Format(
            mediaSubType: "TEST", pixelFormat: .bgr, dimensions: .init(width: 64, height: 48),
            videoSupportedFrameRateRanges: [.init(framesPerSecond: 30)])
    ]
    let isLive = true
    let pacing = FramePacing.realTime
    func open(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) {}
    func nextFrame(isCancelled: @Sendable () -> Bool) throws(CaptureError) -> SourceFrame? {
        while !isCancelled() { Thread.sleep(forTimeInterval: 0.01) }
        return nil
    }
    func close() {}
}

@Suite(.serialized) struct PhotoOutputTests {
    @Test func aCapturePendingWhenTheSessionStopsStillGetsItsWholeLifecycle() throws {
        let device = try CaptureDevice(uniqueID: "test:silent", localizedName: "Silent double", deviceType: .external, source: SilentCamera())
        let session = CaptureSession()
        try session.addInput(try CaptureDeviceInput(device: device))
        let output = CapturePhotoOutput()
        try session.addOutput(output)
        try session.startRunning()
        let events = PhotoEvents()
        let settings = CapturePhotoSettings()
        try output.capturePhoto(with: settings, delegate: events)
        #expect(output.inFlightCaptureCount == 1)
        try session.stopRunning()
        #expect(events.wait(1))
        #expect(events.stages(of: settings.uniqueID) == PhotoEvents.lifecycle(photos: 1))
        #expect(events.finishErrors[settings.uniqueID]??.code == .sessionNotRunning)
        #expect(output.inFlightCaptureCount == 0)
    }

    @Test func singleCaptureFollowsTheLifecycleAndDeliversTheFrame() throws {
        let output = CapturePhotoOutput()
        let session = try PhotoTestSupport.runningSession(output)
        defer { try? session.stopRunning() }
        let events = PhotoEvents()
        let settings = CapturePhotoSettings(previewThumbnailSize: .init(width: 80, height: 80))
        try output.capturePhoto(with: settings, delegate: events)
        #expect(events.wait(1))
        #expect(events.stages(of: settings.uniqueID) == PhotoEvents.lifecycle(photos: 1))
        let photo = try #require(events.photos.first)
        #expect(events.photoErrors.first! == nil)
        #expect(photo.pixelBuffer?.width == 320 && photo.pixelBuffer?.height == 240)
        #expect(photo.resolvedSettings.photoDimensions == .init(width: 320, height: 240))
        #expect(photo.previewPixelBuffer?.width == 80 && photo.previewPixelBuffer?.height == 60)
        let data = try #require(photo.fileDataRepresentation())
        #expect(data.prefix(4) == Data([0xFF, 0xD8, 0xFF, 0xE1]))  // SOI then our EXIF APP1
        #expect(output.maxPhotoDimensions == .init(width: 320, height: 240))
        #expect(output.inFlightCaptureCount == 0)
        // Settings are single-use.
        do {
            try output.capturePhoto(with: settings, delegate: events)
            Issue.record("reusing settings should throw")
        } catch {
            #expect(error.code == .photoSettingsReused)
        }
    }

    @Test func concurrentCapturesEachGetTheirWholeLifecycleInOrder() throws {
        let output = CapturePhotoOutput()
        let session = try PhotoTestSupport.runningSession(output)
        defer { try? session.stopRunning() }
        let events = PhotoEvents()
        let all = (0..<4).map { _ in CapturePhotoSettings(codec: .png) }
            + [CapturePhotoSettings(maxPhotoDimensions: .init(width: 160, height: 160))]
        for s in all { try output.capturePhoto(with: s, delegate: events) }
        #expect(events.wait(all.count))
        for s in all { #expect(events.stages(of: s.uniqueID) == PhotoEvents.lifecycle(photos: 1)) }
        // Captures begin in the order they were asked for.
        let begins = events.events.filter { $0.hasPrefix("willBegin") }
        #expect(begins == all.map { "willBegin:\($0.uniqueID)" })
        #expect(events.photoErrors.allSatisfy { $0 == nil })
        let png = try #require(events.photos.first { $0.resolvedSettings.uniqueID == all[0].uniqueID }?.fileDataRepresentation())
        #expect(png.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]))
        // The smaller maximum scaled the last photo down, aspect kept.
        let scaled = try #require(events.photos.first { $0.resolvedSettings.uniqueID == all[4].uniqueID })
        #expect(scaled.resolvedSettings.photoDimensions == .init(width: 160, height: 120))
        #expect(scaled.pixelBuffer?.width == 160 && scaled.pixelBuffer?.height == 120)
    }

    @Test func bracketsOnADeviceWithoutExposureControlFailWithTheFullLifecycle() throws {
        let output = CapturePhotoOutput()
        let session = try PhotoTestSupport.runningSession(output)
        defer { try? session.stopRunning() }
        #expect(output.maxBracketedCapturePhotoCount == 0)
        let events = PhotoEvents()
        let bracket = CapturePhotoSettings(exposureBrackets: [-1, 0, 1])
        let flash = CapturePhotoSettings(flashMode: .on)
        try output.capturePhoto(with: bracket, delegate: events)
        try output.capturePhoto(with: flash, delegate: events)
        #expect(events.wait(2))
        #expect(events.stages(of: bracket.uniqueID) == PhotoEvents.lifecycle(photos: 3))
        #expect(events.stages(of: flash.uniqueID) == PhotoEvents.lifecycle(photos: 1))
        #expect(events.photoErrors.count == 4)
        #expect(events.photoErrors.allSatisfy { $0?.code == .unsupported })
        #expect(events.finishErrors[bracket.uniqueID]??.code == .unsupported)
        #expect(events.finishErrors[flash.uniqueID]??.code == .unsupported)
        #expect(events.photos.allSatisfy { $0.pixelBuffer == nil && $0.fileDataRepresentation() == nil })
    }

    @Test func bracketsOnADeviceWithExposureControlTakeOnePhotoPerBias() throws {
        let camera = BracketingCamera()
        let device = try CaptureDevice(uniqueID: "test:bracketing", localizedName: "Bracketing double", deviceType: .external, source: camera)
        let session = CaptureSession()
        try session.addInput(try CaptureDeviceInput(device: device))
        let output = CapturePhotoOutput()
        try session.addOutput(output)
        try session.startRunning()
        defer { try? session.stopRunning() }
        #expect(output.maxBracketedCapturePhotoCount == 3)
        let events = PhotoEvents()
        let settings = CapturePhotoSettings(exposureBrackets: [-1, 0, 1])
        try output.capturePhoto(with: settings, delegate: events)
        #expect(events.wait(1))
        #expect(events.stages(of: settings.uniqueID) == PhotoEvents.lifecycle(photos: 3))
        #expect(events.photos.map(\.exposureTargetBias) == [-1, 0, 1])
        #expect(events.photos.map(\.photoCount) == [1, 2, 3])
        // Each photo was taken after its bias took effect: 40, 80, 160.
        let levels = events.photos.map { Int($0.pixelBuffer?.pixel(x: 5, y: 5)[0] ?? 0) }
        #expect(levels == [40, 80, 160])
    }

    @Test func aFailingWriteIsThePhotosErrorAndCaptureGoesOn() throws {
        let output = CapturePhotoOutput()
        let session = try PhotoTestSupport.runningSession(output)
        defer { try? session.stopRunning() }
        let folder = try PhotoTestSupport.temporaryFolder("photo-write")
        defer { try? FileManager.default.removeItem(at: folder) }
        let events = PhotoEvents()
        let missing = CapturePhotoSettings(fileURL: folder.appendingPathComponent("no-such-folder/a.jpg"))
        try output.capturePhoto(with: missing, delegate: events)
        #expect(events.wait(1))
        #expect(events.stages(of: missing.uniqueID) == PhotoEvents.lifecycle(photos: 1))
        #expect(events.photoErrors.first??.code == .writeFailed)
        #expect(events.photoErrors.first??.errno == ENOENT)
        #expect(events.photos.first?.fileDataRepresentation() != nil)  // the photo itself is fine
        #expect(events.finishErrors[missing.uniqueID]??.code == .writeFailed)

        let good = CapturePhotoSettings(fileURL: folder.appendingPathComponent("b.jpg"))
        try output.capturePhoto(with: good, delegate: events)
        #expect(events.wait(1))
        #expect(events.finishErrors[good.uniqueID]! == nil)
        let written = try Data(contentsOf: folder.appendingPathComponent("b.jpg"))
        #expect(written == events.photos.last?.fileDataRepresentation())
        // Nothing but the photo is left in the folder (no temporary files).
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["b.jpg"])
    }

    @Test func capturingWithoutARunningSessionThrowsAndCallsNothing() throws {
        let output = CapturePhotoOutput()
        let session = try PhotoTestSupport.runningSession(output, scene: PhotoTestSupport.scene(frameCount: 1))
        #expect(session.waitUntilStopped(timeout: 10))
        let events = PhotoEvents()
        #expect(throws: CaptureError.self) { try output.capturePhoto(with: CapturePhotoSettings(), delegate: events) }
        #expect(events.events.isEmpty)
    }
}

@Suite(.serialized) struct PhotoFileTests {
    /// Writes a frame with every rotation/mirroring and lets Pillow (not our code) read the EXIF
    /// and apply the orientation: the result must equal what the connection delivers as video.
    /// The quality setting reaches libjpeg: the same frame encodes to the same bytes every time,
    /// and Pillow's quantisation-table estimate follows the requested quality. (The encoder once
    /// passed half its parameter count to OpenCV, which then read the quality from beyond the
    /// array: photos and movie frames came out at random quality.)
    @Test func jpegQualityIsHonouredAndEncodingIsRepeatable() throws {
        let folder = try PhotoTestSupport.temporaryFolder("jpeg-quality")
        defer { try? FileManager.default.removeItem(at: folder) }
        let frame = try PhotoTestSupport.firstFrame(width: 320, height: 240)
        let converter = FrameConverter()
        func encode(_ quality: Int) throws -> Data {
            try PhotoEncoder.encode(
                frame, codec: .jpeg(quality: quality), rotation: 0, mirrored: false, device: nil,
                captureDate: Date(timeIntervalSince1970: 0), annotation: nil, converter: converter)
        }
        var sizes: [Int: Int] = [:]
        for quality in [10, 50, 95] {
            let first = try encode(quality)
            for _ in 0..<20 { #expect(try encode(quality) == first, "quality \(quality) encodes differently on a repeat") }
            sizes[quality] = first.count
            try AtomicFile.write(first, to: folder.appendingPathComponent("q\(quality).jpg"))
        }
        // Noise makes size grow steeply with quality.
        #expect(sizes[10]! * 2 < sizes[50]! && sizes[50]! * 2 < sizes[95]!, "sizes \(sizes)")
        // libjpeg scales its standard tables by the quality: the first luminance entry is 16 at 50,
        // 80 at 10 (5000/q %) and 2 at 95 (200 − 2q %).
        let script = """
            import sys
            from PIL import Image
            for path in sys.argv[1:]:
                print(Image.open(path).quantization[0][0])
            """
        let out = try PhotoTestSupport.python(script, [10, 50, 95].map { folder.appendingPathComponent("q\($0).jpg").path })
        #expect(out.split(separator: "\n").map(String.init) == ["80", "16", "2"])
    }

    @Test func exifOrientationMatchesTheConnectionsTransformForAllEightCases() throws {
        let folder = try PhotoTestSupport.temporaryFolder("exif-orientation")
        defer { try? FileManager.default.removeItem(at: folder) }
        let frame = try PhotoTestSupport.firstFrame(width: 96, height: 64)
        let sample = SampleBuffer(
            pixelBuffer: frame, presentationTimeStamp: .zero, duration: .zero, sequenceNumber: 0,
            inputID: CaptureInput.ID(rawValue: 1))
        let converter = FrameConverter()
        var cases: [(Int32, Bool)] = []
        for rotation: Int32 in [0, 90, 180, 270] { for mirrored in [false, true] { cases.append((rotation, mirrored)) } }
        for (rotation, mirrored) in cases {
            let data = try PhotoEncoder.encode(
                frame, codec: .jpeg(quality: 100), rotation: rotation, mirrored: mirrored, device: nil,
                captureDate: Date(), annotation: nil, converter: converter)
            try AtomicFile.write(data, to: folder.appendingPathComponent("r\(rotation)m\(mirrored ? 1 : 0).jpg"))
        }
        let script = """
            import sys
            from PIL import Image, ImageOps
            for path in sys.argv[1:]:
                im = Image.open(path)
                up = ImageOps.exif_transpose(im)
                up.save(path + ".png")
                print(im.getexif().get(0x0112))
            """
        let paths = cases.map { folder.appendingPathComponent("r\($0.0)m\($0.1 ? 1 : 0).jpg").path }
        let orientations = try PhotoTestSupport.python(script, paths).split(separator: "\n").map(String.init)
        #expect(orientations == ["1", "2", "6", "5", "3", "4", "8", "7"])
        for ((rotation, mirrored), path) in zip(cases, paths) {
            let expected = try converter.convert(sample, to: .bgr, rotation: rotation, mirrored: mirrored).pixelBuffer
            let shown = try ImageFolderSource.decode(path + ".png")
            #expect(shown.width == expected.width && shown.height == expected.height, "r\(rotation) m\(mirrored)")
            guard shown.width == expected.width, shown.height == expected.height else { continue }
            // The red block must land in the same place (JPEG blurs its edges, so compare centroids).
            let a = Self.redCentroid(shown)
            let b = Self.redCentroid(expected)
            #expect(abs(a.x - b.x) < 1.5 && abs(a.y - b.y) < 1.5, "rotation \(rotation) mirrored \(mirrored): \(a) vs \(b)")
        }
    }

    /// Centre of the strongly red pixels (the scene's block).
    static func redCentroid(_ buffer: PixelBuffer) -> (x: Double, y: Double) {
        var sx = 0.0, sy = 0.0, n = 0.0
        for y in 0..<buffer.height {
            for x in 0..<buffer.width {
                let p = buffer.pixel(x: x, y: y)
                if Int(p[2]) - Int(max(p[0], p[1])) > 100 { sx += Double(x); sy += Double(y); n += 1 }
            }
        }
        return n > 0 ? (sx / n, sy / n) : (-1, -1)
    }

    /// Make, Model, DateTimeOriginal, pixel size and the face record, read back by libexif's
    /// `exif` tool and by Pillow.
    @Test func exifFieldsReadBackWithIndependentReaders() throws {
        let output = CapturePhotoOutput()
        let session = try PhotoTestSupport.runningSession(output)
        defer { try? session.stopRunning() }
        output.connections.first?.videoRotationAngle = 90
        output.connections.first?.isVideoMirrored = true
        let folder = try PhotoTestSupport.temporaryFolder("exif-fields")
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("face.jpg")
        let face = MetadataFaceObject(
            bounds: CGRect(x: 0.25, y: 0.125, width: 0.25, height: 0.375), faceID: 42, hasRollAngle: true, rollAngle: 3,
            confidence: 0.93, time: .zero, inputID: CaptureInput.ID(rawValue: 1))
        let settings = CapturePhotoSettings(
            fileURL: url, annotation: PhotoAnnotation(reason: "newFace", frameTime: 1.5, faces: [face]))
        let events = PhotoEvents()
        let before = Date()
        try output.capturePhoto(with: settings, delegate: events)
        #expect(events.wait(1))
        #expect(events.finishErrors[settings.uniqueID]! == nil)

        // libexif's command-line tool.
        let machine = try PhotoTestSupport.run("/usr/bin/exif", ["-m", url.path])
        var tags: [String: String] = [:]
        for line in machine.split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1).map(String.init)
            if parts.count == 2 { tags[parts[0]] = parts[1] }
        }
        #expect(tags["Manufacturer"] == "cvcam synthetic camera")
        #expect(tags["Model"] == "Synthetic camera 320x240")
        #expect(tags["Orientation"] == "Left-top")  // EXIF 5: rotate 90° then mirror
        #expect(tags["Pixel X Dimension"] == "320")
        #expect(tags["Pixel Y Dimension"] == "240")

        // Pillow: DateTimeOriginal and the UserComment JSON.
        let script = """
            import sys, json
            from PIL import Image
            ex = Image.open(sys.argv[1]).getexif().get_ifd(0x8769)
            comment = ex[0x9286]
            print(ex[0x9003])
            print(comment[8:].decode('ascii'))
            """
        let lines = try PhotoTestSupport.python(script, [url.path]).split(separator: "\n").map(String.init)
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy:MM:dd HH:mm:ss"
        formatter.timeZone = .current
        let taken = try #require(formatter.date(from: lines[0]))
        #expect(abs(taken.timeIntervalSince(before)) < 5)
        let record = try JSONDecoder().decode(PhotoAnnotation.self, from: Data(lines[1].utf8))
        #expect(record.reason == "newFace")
        #expect(record.faces.map(\.faceID) == [42])
        #expect(record.faces.first?.box == MetadataRecord.Box(face.bounds))
        #expect(record.faces.first?.score == 0.93)
        #expect(record.faces.first?.roll == 3)
    }

    @Test func atomicWriteReportsAnInjectedFullDiskAndLeavesNoPartialFile() throws {
        let folder = try PhotoTestSupport.temporaryFolder("atomic-seam")
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("photo.jpg")
        try AtomicFile.write(Data("old".utf8), to: url)
        let calls = FailingFileCalls()
        calls.failWritesAfter = 1000
        let data = Data(repeating: 7, count: 5000)
        do {
            try AtomicFile.write(data, to: url, calls: calls)
            Issue.record("the write should have failed")
        } catch {
            #expect(error.code == .writeFailed)
            #expect(error.errno == ENOSPC)
            #expect(error.message.contains("full"))
        }
        #expect(try Data(contentsOf: url) == Data("old".utf8))  // the old file, untouched
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["photo.jpg"])
    }

    @Test(.enabled(if: PhotoTestSupport.canMountTmpfs, "mounting a small tmpfs needs root (CAP_SYS_ADMIN)"))
    func aRealFullDiskAndAReadOnlyFolderAreClearErrors() throws {
        let small = try #require(PhotoTestSupport.mountTmpfs(bytes: 64 * 1024))
        defer { PhotoTestSupport.unmount(small) }
        do {
            try AtomicFile.write(Data(repeating: 1, count: 256 * 1024), to: small.appendingPathComponent("big.jpg"))
            Issue.record("a 256 KiB file cannot fit in 64 KiB")
        } catch {
            #expect(error.code == .writeFailed && error.errno == ENOSPC)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: small.path).isEmpty)
        // The disk is usable again for something that fits.
        try AtomicFile.write(Data(repeating: 1, count: 8 * 1024), to: small.appendingPathComponent("small.jpg"))

        let readOnly = try #require(PhotoTestSupport.mountTmpfs(bytes: 64 * 1024, readOnly: true))
        defer { PhotoTestSupport.unmount(readOnly) }
        do {
            try AtomicFile.write(Data("x".utf8), to: readOnly.appendingPathComponent("a.jpg"))
            Issue.record("a read-only folder cannot take a file")
        } catch {
            #expect(error.code == .writeFailed && error.errno == EROFS)
            #expect(error.message.contains("read-only"))
        }
    }
}
