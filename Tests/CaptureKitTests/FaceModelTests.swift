import CaptureKit
import CaptureKitTesting
import Foundation
import Synchronization
import Testing

/// The face models travel with the library, and a missing YuNet is never a quiet downgrade
/// (issue #32, item 1): where they are found, what a detector and a metadata output report,
/// and the typed error a library user gets unless they opted in to the Haar cascade.
@Suite struct FaceModelTests {
    static let models = Fixtures.packageRoot.appendingPathComponent("Models")

    /// A fresh folder holding copies of `files` from Models/ (none: an empty folder).
    static func folder(with files: [String]) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-models-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for file in files {
            try FileManager.default.copyItem(at: models.appendingPathComponent(file), to: folder.appendingPathComponent(file))
        }
        return folder
    }

    // MARK: Where the models are found

    /// The test binary sits in a build folder beside `<package>_CaptureVision.resources`: the
    /// models come from the library's own resources, not from the checkout.
    @Test func theLibraryResourcesHoldTheModelsBesideTheBuiltBinary() throws {
        let search = FaceModelSearch(environment: [:])
        let yuNet = try #require(search.locate(FaceDetector.yuNetModelName))
        #expect(yuNet.place == .resourceBundle, "\(search.candidates)")
        #expect(yuNet.file.deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.hasSuffix("_CaptureVision.resources"))
        for file in [FaceDetector.yuNet2022ModelName, FaceDetector.haarCascadeName, "LICENSE.yunet-2023-libfacedetection.train-Apache-2.0.txt",
                     "LICENSE.haarcascade-frontalface-alt2.txt"] {
            #expect(search.locate(file)?.place == .resourceBundle, "\(file)")
        }
    }

    /// The bundle is found by its suffix beside the executable, whatever the package is called;
    /// a folder of that name without Models/ is not one; the installed tree comes first.
    @Test func theResourcesAreFoundBesideAnyExecutableAfterTheInstalledTree() throws {
        let root = try Self.folder(with: [])
        defer { try? FileManager.default.removeItem(at: root) }
        let bin = root.appendingPathComponent("bin")
        let executable = bin.appendingPathComponent("app")
        try FileManager.default.createDirectory(at: bin.appendingPathComponent("other_CaptureVision.resources"), withIntermediateDirectories: true)
        #expect(FaceModelSearch.resourceBundle(besideExecutable: executable) == nil)

        let bundle = bin.appendingPathComponent("my-app_CaptureVision.resources/Models")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        #expect(FaceModelSearch.resourceBundle(besideExecutable: executable)?.path == bundle.path)
        let search = FaceModelSearch(environment: [:], executable: executable)
        #expect(search.candidates.map(\.place) == [.installedBesideExecutable, .resourceBundle, .system, .local, .openCVData])
        #expect(search.candidates[1].folder.path == bundle.path)

        // CVCAM_MODELS, when set, is still the only place looked in.
        let named = FaceModelSearch(environment: ["CVCAM_MODELS": "/elsewhere"], executable: executable)
        #expect(named.candidates.map(\.place) == [.environment])
    }

    // MARK: What a detector runs

    @Test func aDetectorSaysWhichModelItRuns() throws {
        let yuNet = try FaceDetector()
        #expect(yuNet.model.backend == .yuNet && yuNet.model.isYuNet)
        #expect(yuNet.model.file.lastPathComponent == FaceDetector.yuNetModelName)
        #expect(FileManager.default.fileExists(atPath: yuNet.model.file.path))

        let haarOnly = try Self.folder(with: [FaceDetector.haarCascadeName])
        defer { try? FileManager.default.removeItem(at: haarOnly) }
        let haar = try FaceDetector(modelsDirectory: haarOnly, allowsHaarCascadeFallback: true)
        #expect(haar.backend == .haar)
        #expect(haar.model == FaceDetectorModel(backend: .haar, file: haarOnly.appendingPathComponent(FaceDetector.haarCascadeName)))
        #expect(try FaceDetector(modelsDirectory: haarOnly, backend: .haar).model.backend == .haar)
    }

    /// Without YuNet, a detector is an error naming where it looked and both ways out, unless
    /// the caller opted in to the cascade.
    @Test func withoutYuNetADetectorThrowsUnlessTheCascadeIsChosen() throws {
        let haarOnly = try Self.folder(with: [FaceDetector.haarCascadeName])
        defer { try? FileManager.default.removeItem(at: haarOnly) }
        do {
            _ = try FaceDetector(modelsDirectory: haarOnly)
            Issue.record("a folder without YuNet gave a detector")
        } catch {
            #expect(error.code == .faceModelUnavailable)
            #expect(error.message.contains(haarOnly.path) && error.message.contains("allowsHaarCascadeFallback"), "\(error.message)")
        }
    }

    // MARK: What a metadata output does without YuNet

    @Test func theDefaultOutputRunsYuNetFromTheLibrary() throws {
        let output = CaptureMetadataOutput()
        #expect(output.faceDetectorModel == nil, "nothing is loaded before faces are asked for")
        #expect(output.availableMetadataObjectTypes.contains(.face))
        output.metadataObjectTypes = [.face, .qr]
        let model = try #require(output.faceDetectorModel)
        #expect(model.backend == .yuNet && model.file.lastPathComponent == FaceDetector.yuNetModelName)
        #expect(!output.allowsHaarCascadeFallback)
    }

    @Test func theThrowingSetterReportsAMissingModelAtOnce() throws {
        for files in [[], [FaceDetector.haarCascadeName]] {
            let folder = try Self.folder(with: files)
            defer { try? FileManager.default.removeItem(at: folder) }
            let output = CaptureMetadataOutput(faceDetection: .realTime, faceModelsDirectory: folder)
            #expect(!output.availableMetadataObjectTypes.contains(.face))
            do {
                try output.setMetadataObjectTypes([.face, .qr])
                Issue.record("faces without YuNet were accepted (\(files))")
            } catch {
                #expect(error.code == .faceModelUnavailable, "\(error)")
            }
            #expect(output.metadataObjectTypes.isEmpty, "a refused setting changes nothing")
            #expect(output.faceDetectorModel == nil)
        }
    }

    /// The AVFoundation spelling cannot throw: the session's start does, before the device opens.
    @Test func thePropertySetterLeavesTheErrorToStartRunning() throws {
        let empty = try Self.folder(with: [])
        defer { try? FileManager.default.removeItem(at: empty) }
        let output = CaptureMetadataOutput(faceDetection: .realTime, faceModelsDirectory: empty)
        let session = CaptureSession()
        try session.addInput(CaptureDeviceInput(device: CaptureDevice(syntheticScene: movingScene(frames: nil))))
        try session.addOutput(output)
        output.metadataObjectTypes = [.face, .qr]
        #expect(output.metadataObjectTypes == [.face, .qr])
        do {
            try session.startRunning()
            Issue.record("the session started without a face model")
            try? session.stopRunning()
        } catch {
            #expect(error.code == .faceModelUnavailable, "\(error)")
        }
        #expect(session.runState == .stopped)

        // Codes alone still run.
        output.metadataObjectTypes = [.qr]
        try session.startRunning()
        try session.stopRunning()
    }

    /// Faces asked for while the session runs, without a model: the session stops with the error
    /// as a runtime error event (AVFoundation's AVCaptureSessionRuntimeError), it does not go on
    /// without faces.
    @Test func askingForFacesWhileRunningWithoutAModelIsARuntimeError() async throws {
        let empty = try Self.folder(with: [])
        defer { try? FileManager.default.removeItem(at: empty) }
        let output = CaptureMetadataOutput(faceDetection: .realTime, faceModelsDirectory: empty)
        let session = CaptureSession()
        try session.addInput(CaptureDeviceInput(device: CaptureDevice(syntheticScene: movingScene(frames: nil))))
        try session.addOutput(output)
        output.metadataObjectTypes = [.qr]
        let events = session.events()
        try session.startRunning()
        output.metadataObjectTypes = [.face, .qr]
        let event = await nextEvent(events, timeout: 60) { if case .runtimeError = $0 { true } else { false } }
        guard case .runtimeError(let error) = event else {
            Issue.record("no runtime error event; got \(String(describing: event))")
            try? session.stopRunning()
            return
        }
        #expect(error.code == .faceModelUnavailable)
        #expect(session.waitUntilStopped(timeout: 60))
        #expect(session.lastRuntimeError?.code == .faceModelUnavailable)
    }

    /// The explicit choice: the cascade runs, the output says so, and faces are found.
    @Test func anOutputThatOptedInRunsTheCascadeAndSaysSo() throws {
        let haarOnly = try Self.folder(with: [FaceDetector.haarCascadeName])
        defer { try? FileManager.default.removeItem(at: haarOnly) }
        let output = CaptureMetadataOutput(
            faceDetection: .realTime, faceModelsDirectory: haarOnly, allowsHaarCascadeFallback: true)
        #expect(output.allowsHaarCascadeFallback)
        #expect(output.availableMetadataObjectTypes.contains(.face))
        let scene = SyntheticScene(
            size: .init(width: 640, height: 480), frameRate: 10, frameCount: 10, background: .color(red: 120, green: 120, blue: 120),
            sprites: [.init(content: .image(path: Fixtures.faceImage("grace_hopper.jpg")), size: .init(width: 256, height: 300), origin: CGPoint(x: 190, y: 90))])
        let recorder = try MetadataRecorder.record(scene, through: output, types: [.face])
        #expect(output.faceDetectorModel?.backend == .haar)
        let faces = recorder.frames.flatMap { $0 }.compactMap { $0 as? MetadataFaceObject }
        #expect(!faces.isEmpty)
        #expect(faces.allSatisfy { !$0.hasRollAngle && !$0.hasYawAngle && $0.landmarks.isEmpty })
    }

    /// A model installed after a failed attempt is found the next time faces are asked for.
    @Test func aModelInstalledLaterIsFoundOnTheNextAttempt() throws {
        let folder = try Self.folder(with: [])
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = CaptureMetadataOutput(faceDetection: .realTime, faceModelsDirectory: folder)
        #expect(throws: CaptureError.self) { try output.setMetadataObjectTypes([.face]) }
        try FileManager.default.copyItem(
            at: Self.models.appendingPathComponent(FaceDetector.yuNetModelName),
            to: folder.appendingPathComponent(FaceDetector.yuNetModelName))
        try output.setMetadataObjectTypes([.face])
        #expect(output.faceDetectorModel?.isYuNet == true)
    }
}
