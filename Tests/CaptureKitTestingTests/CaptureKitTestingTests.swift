import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

/// The testing product through its public API only (no `@testable`), as an app's tests use it.
@Suite struct CaptureKitTestingTests {
    @Test func splitMix64IsFixedBySeedAndStaysInRange() {
        var a = SplitMix64(seed: 42), b = SplitMix64(seed: 42), c = SplitMix64(seed: 43)
        let first = (0..<8).map { _ in a.next() }
        #expect(first == (0..<8).map { _ in b.next() })
        #expect(first != (0..<8).map { _ in c.next() })
        for _ in 0..<1000 {
            #expect((0..<7).contains(a.int(7)))
            let d = a.double(-2, 3)
            #expect(d >= -2 && d < 3)
        }
        #expect(a.int(0) == 0 && a.int(1) == 0)
    }

    /// The same seed gives the same frames, every code lies inside its frame, and CodeDetector
    /// reads a plain sample's payload back.
    @Test func corpusIsDeterministicAndReadable() throws {
        let one = try QRTestCorpus.samples(.plain, count: 2, seed: 7)
        let two = try QRTestCorpus.samples(.plain, count: 2, seed: 7)
        #expect(one.map(\.expectedPayloads) == two.map(\.expectedPayloads))
        #expect(one.map { $0.image.packedBytes() } == two.map { $0.image.packedBytes() })
        #expect(try QRTestCorpus.samples(.plain, count: 2, seed: 8).map(\.expectedPayloads) != one.map(\.expectedPayloads))
        for sample in one {
            #expect(sample.image.width == 640 && sample.image.height == 480 && sample.codes.count == 1)
            for p in sample.codes.flatMap(\.corners) {
                #expect(p.x >= 0 && p.y >= 0 && p.x <= 640 && p.y <= 480)
            }
        }
        let detector = try CodeDetector()
        let read = try detector.detect(in: one[0].image).map(\.payload)
        #expect(read == one[0].expectedPayloads)
    }

    /// Every high-version sample holds its code (version 25–40, modules of 2 px or more, the
    /// symbol and its 4-module quiet zone inside the frame), and the detector reads one back.
    /// Before, no 640x480 placement fitted and the category held no code at all.
    @Test(arguments: [QRTestCorpus.Category.highVersion, .highVersionLarge])
    func highVersionSamplesHoldACodeThatFits(_ category: QRTestCorpus.Category) throws {
        let samples = try QRTestCorpus.samples(category, count: 6, seed: 2026)
        for sample in samples {
            try #require(sample.codes.count == 1, "\(sample.name)")
            let code = sample.codes[0]
            #expect((25...40).contains(code.version) && code.moduleSize >= 2, "\(sample.name)")
            let quiet = 4 * code.moduleSize
            for p in code.corners {
                #expect(p.x >= quiet && p.y >= quiet, "\(sample.name)")
                #expect(p.x <= Double(sample.image.width) - quiet && p.y <= Double(sample.image.height) - quiet, "\(sample.name)")
            }
        }
        let detector = try CodeDetector()
        #expect(try samples.contains { try detector.detect(in: $0.image).map(\.payload) == $0.expectedPayloads })
    }

    @Test func headerOnlyPNGDeclaresItsSizeAndIsRefusedWhenTooLarge() throws {
        let png = TestImageFiles.pngHeaderOnly(width: 300, height: 200)
        #expect(png.count == 45)
        #expect(Array(png[16..<24]) == [0, 0, 0x01, 0x2C, 0, 0, 0, 0xC8])
        let dir = try TemporaryDirectory()
        let path = dir.path("huge.png")
        try Data(TestImageFiles.pngHeaderOnly(width: 32000, height: 32000)).write(to: URL(fileURLWithPath: path))
        #expect(throws: CaptureError.self) { _ = try ImageFolderSource.decode(path) }
    }

    @Test func temporaryDirectoryGoesAwayWithItsValue() throws {
        var dir: TemporaryDirectory? = try TemporaryDirectory()
        let path = try #require(dir).url.path
        try Data([1]).write(to: URL(fileURLWithPath: try #require(dir).path("a")))
        #expect(FileManager.default.fileExists(atPath: path))
        dir = nil
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// A session over the scripted source delivers its frames, minus the skipped sequence
    /// numbers, to a FrameRecorder; an EventLog sees the session start.
    @Test func scriptedSourceThroughASessionIntoARecorder() throws {
        let source = ScriptedLiveSource(frames: 8, interval: 0.001, skipping: [2, 5])
        let session = CaptureSession()
        let log = EventLog(session)
        let device = try CaptureDevice(
            uniqueID: "scripted", localizedName: "Scripted camera", deviceType: .external, source: source)
        try session.addInput(CaptureDeviceInput(device: device))
        let output = CaptureVideoDataOutput()
        output.alwaysDiscardsLateVideoFrames = false
        let recorder = FrameRecorder()
        output.setSampleBufferDelegate(recorder, queue: DispatchQueue(label: "recorder"))
        try session.addOutput(output)
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 10))
        let deadline = Date().addingTimeInterval(5)
        while recorder.frames.count < 6, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(recorder.frames.map(\.sequenceNumber) == [0, 1, 3, 4, 6, 7])
        #expect(source.openCount.withLock { $0 } == 1)
        #expect(log.events(count: 1).first?.hasPrefix("didStartRunning") == true)
    }

    /// Two plays of a three-frame scene are one six-frame stream: times and numbers continue.
    @Test func loopingSceneContinuesTimeAcrossRepetitions() throws {
        let scene = SyntheticScene(size: .init(width: 32, height: 24), frameRate: 30, frameCount: 3, background: .colorBars)
        let source = try LoopingSceneSource(scene: scene, cycles: 2)
        try source.open(format: source.formats[0], frameDuration: MediaTime(value: 1, timescale: 30))
        defer { source.close() }
        var frames: [SourceFrame] = []
        while let frame = try source.nextFrame(isCancelled: { false }) { frames.append(frame) }
        #expect(frames.map(\.sequenceNumber) == [0, 1, 2, 3, 4, 5])
        #expect(frames.map(\.presentationTimeStamp) == (0..<6).map { MediaTime(value: Int64($0), timescale: 30) })
    }
}
