import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

extension MetadataRecorder {
    /// Plays `scene` as fast as possible through a session into `output` looking for `types`
    /// (after `configure`), and returns what the output delivered once it is idle.
    static func record(
        _ scene: SyntheticScene, through output: CaptureMetadataOutput, types: [MetadataObjectType],
        configure: (CaptureMetadataOutput) -> Void = { _ in }
    ) throws -> MetadataRecorder {
        let session = CaptureSession()
        try session.addInput(CaptureDeviceInput(device: CaptureDevice(syntheticScene: scene, pacing: .asFastAsPossible)))
        try session.addOutput(output)
        try output.setMetadataObjectTypes(types)
        configure(output)
        let recorder = MetadataRecorder()
        output.setMetadataObjectsDelegate(recorder, queue: DispatchQueue(label: "metadata"))
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 120))
        output.waitUntilIdle()
        return recorder
    }
}

/// CaptureMetadataOutput in a session, on synthetic scenes whose ground truth is known.
@Suite struct MetadataOutputTests {
    func run(_ scene: SyntheticScene, types: [MetadataObjectType], configure: (CaptureMetadataOutput) -> Void = { _ in })
        throws -> (MetadataRecorder, CaptureMetadataOutput)
    {
        let output = CaptureMetadataOutput()
        return (try MetadataRecorder.record(scene, through: output, types: types, configure: configure), output)
    }

    /// A face photo crossing a gray frame left to right in 3 s, leaving, and crossing again.
    func crossingScene(frames: Int = 60) -> SyntheticScene {
        let face = Fixtures.faceImage("grace_hopper.jpg")
        return SyntheticScene(
            size: .init(width: 640, height: 480), frameRate: 10, frameCount: frames,
            background: .color(red: 120, green: 120, blue: 120),
            sprites: [
                .init(content: .image(path: face), size: .init(width: 200, height: 233), origin: CGPoint(x: -100, y: 120),
                      velocity: CGSize(width: 250, height: 0), appearsAt: 0, disappearsAt: 2.6),
                .init(content: .image(path: face), size: .init(width: 200, height: 233), origin: CGPoint(x: 20, y: 120),
                      velocity: CGSize(width: 100, height: 0), appearsAt: 3.5, disappearsAt: 5.5),
            ])
    }

    @Test func aFaceKeepsOneIDWhileInViewAndGetsANewOneWhenItReturns() throws {
        let (recorder, output) = try run(crossingScene(), types: [.face])
        let entered = recorder.events.compactMap { if case .faceEntered(let f) = $0 { f } else { nil } }
        let left = recorder.events.compactMap { if case .faceLeft(let f) = $0 { f } else { nil } }
        #expect(entered.count == 2, "\(recorder.events.map(\.name))")
        #expect(left.count == 2)
        #expect(Set(entered.map(\.faceID)).count == 2)
        #expect(entered[0].faceID < entered[1].faceID)
        // Every face object of the first pass carries the first ID, of the second pass the second.
        let faces = recorder.frames.flatMap { $0 }.compactMap { $0 as? MetadataFaceObject }
        #expect(faces.filter { $0.time.seconds < 3 }.allSatisfy { $0.faceID == entered[0].faceID })
        #expect(faces.filter { $0.time.seconds > 3.4 }.allSatisfy { $0.faceID == entered[1].faceID })
        #expect(output.processedFrameCount == 60)
        #expect(output.skippedFrameCount == 0)
        // Boxes follow the sprite: the face moves right at 250 px/s, i.e. ~0.39 of the width per second.
        let first = faces.filter { $0.faceID == entered[0].faceID }
        if let a = first.first, let b = first.last, b.time.seconds > a.time.seconds {
            let speed = (b.bounds.midX - a.bounds.midX) / (b.time.seconds - a.time.seconds)
            #expect(abs(speed - 250.0 / 640) < 0.08, "speed \(speed)")
        }
    }

    /// A user switching faces off and on again while the session runs (as `cvcam serve`'s
    /// `detect off|on` does): switching off ends the tracks (`leave`), switching on starts afresh
    /// (`enter` with a new ID), never an `update` of a face nobody saw enter.
    @Test func switchingFacesOffEndsTheirTracksAndOnStartsAfresh() throws {
        let face = Fixtures.faceImage("grace_hopper.jpg")
        let scene = SyntheticScene(
            size: .init(width: 640, height: 480), frameRate: 10, frameCount: 1200,
            background: .color(red: 120, green: 120, blue: 120),
            sprites: [.init(content: .image(path: face), size: .init(width: 200, height: 233), origin: CGPoint(x: 220, y: 120))])
        let session = CaptureSession()
        try session.addInput(CaptureDeviceInput(device: CaptureDevice(syntheticScene: scene, pacing: .realTime)))
        let output = CaptureMetadataOutput()
        try session.addOutput(output)
        try output.setMetadataObjectTypes([.face])
        let recorder = MetadataRecorder()
        output.setMetadataObjectsDelegate(recorder, queue: DispatchQueue(label: "metadata"))
        try session.startRunning()
        defer { try? session.stopRunning() }
        func wait(_ condition: ([MetadataEvent]) -> Bool) -> Bool {
            let end = Date().addingTimeInterval(60)
            while Date() < end {
                if condition(recorder.events) { return true }
                Thread.sleep(forTimeInterval: 0.02)
            }
            return condition(recorder.events)
        }
        #expect(wait { $0.contains { $0.name == "enter" } })
        try output.setMetadataObjectTypes([])
        #expect(wait { $0.contains { $0.name == "leave" } }, "\(recorder.events.map(\.name))")
        let whileOff = recorder.events.count
        try output.setMetadataObjectTypes([.face])
        #expect(wait { $0.dropFirst(whileOff).contains { $0.name == "enter" } }, "\(recorder.events.map(\.name))")
        try session.stopRunning()
        output.waitUntilIdle()
        let events = recorder.events
        let first = try #require(events.first { $0.name == "enter" }).object as? MetadataFaceObject
        let afterOn = events.dropFirst(whileOff)
        let second = try #require(afterOn.first { $0.name == "enter" }).object as? MetadataFaceObject
        // The first face left before detection was switched on again, and every event after that is
        // about the new face, whose first event is its `enter`.
        #expect((events.prefix(whileOff).last { $0.name == "leave" }?.object as? MetadataFaceObject)?.faceID == first?.faceID)
        #expect(first?.faceID != second?.faceID)
        #expect(afterOn.first?.name == "enter", "\(events.map(\.name))")
        #expect(afterOn.allSatisfy { ($0.object as? MetadataFaceObject)?.faceID == second?.faceID })
    }

    @Test func aCodeHeldInViewIsReportedOncePerAppearance() throws {
        let scene = SyntheticScene(
            size: .init(width: 640, height: 480), frameRate: 10, frameCount: 60, background: .colorBars,
            sprites: [
                .init(content: .qrCode(payload: Array("ticket-42".utf8), correction: 1), size: .init(width: 200, height: 200),
                      origin: CGPoint(x: 220, y: 140), appearsAt: 0.5, disappearsAt: 2.5),
                .init(content: .qrCode(payload: Array("ticket-42".utf8), correction: 1), size: .init(width: 200, height: 200),
                      origin: CGPoint(x: 220, y: 140), appearsAt: 4, disappearsAt: 5),
            ])
        let (once, _) = try run(scene, types: [.qr]) { $0.codeRepeatInterval = .infinity }
        // Each appearance also leaves: the first frame more than the grace period (0.5 s) after
        // it was last seen reports it, as last seen (2.4 s and 4.9 s).
        #expect(once.events.map(\.name) == ["appear", "leave", "appear", "leave"])
        #expect(once.events.map { $0.object.time.seconds } == [0.5, 2.4, 4.0, 4.9])
        let code = once.events.first?.object as? MetadataMachineReadableCodeObject
        #expect(code?.stringValue == "ticket-42")
        #expect(code.map { abs($0.bounds.midX - 0.5) < 0.02 && abs($0.bounds.midY - 0.5) < 0.02 } == true)

        let (repeating, _) = try run(scene, types: [.qr]) { $0.codeRepeatInterval = 1 }
        #expect(repeating.events.map(\.name) == ["appear", "repeat", "leave", "appear", "leave"])
    }

    @Test func rectOfInterestExcludesObjectsOutsideIt() throws {
        let scene = SyntheticScene(
            size: .init(width: 640, height: 480), frameRate: 10, frameCount: 5, background: .colorBars,
            sprites: [
                .init(content: .qrCode(payload: Array("LEFT".utf8), correction: 1), size: .init(width: 180, height: 180), origin: CGPoint(x: 40, y: 150)),
                .init(content: .qrCode(payload: Array("RIGHT".utf8), correction: 1), size: .init(width: 180, height: 180), origin: CGPoint(x: 420, y: 150)),
            ])
        let (all, _) = try run(scene, types: [.qr])
        #expect(Set(all.events.compactMap { ($0.object as? MetadataMachineReadableCodeObject)?.stringValue }) == ["LEFT", "RIGHT"])
        let (right, _) = try run(scene, types: [.qr]) { $0.rectOfInterest = CGRect(x: 0.5, y: 0, width: 0.5, height: 1) }
        // RIGHT appears, and leaves as the input ends.
        #expect(right.events.compactMap { ($0.object as? MetadataMachineReadableCodeObject)?.stringValue } == ["RIGHT", "RIGHT"])
        #expect(right.events.map(\.name) == ["appear", "leave"])
    }

    @Test func facesAndCodesTogether() throws {
        var scene = crossingScene(frames: 20)
        scene.sprites.append(
            .init(content: .qrCode(payload: Array("both".utf8), correction: 1), size: .init(width: 150, height: 150), origin: CGPoint(x: 470, y: 20)))
        let (recorder, output) = try run(scene, types: [.face, .qr])
        #expect(recorder.events.contains { if case .faceEntered = $0 { true } else { false } })
        #expect(recorder.events.contains { if case .codeAppeared(let c) = $0 { c.stringValue == "both" } else { false } })
        #expect(output.stageSeconds.faces > 0 && output.stageSeconds.codes > 0)
    }

    @Test func unavailableTypesAreRefusedAndNothingIsDetectedByDefault() throws {
        let output = CaptureMetadataOutput()
        #expect(output.metadataObjectTypes.isEmpty)
        #expect(output.availableMetadataObjectTypes.contains(.face))
        #expect(output.availableMetadataObjectTypes.contains(.qr))
        #expect(throws: CaptureError.self) { try output.setMetadataObjectTypes([MetadataObjectType(rawValue: "maxicode")]) }
        // With no types set, a session runs and nothing is analysed.
        let session = CaptureSession()
        try session.addInput(CaptureDeviceInput(device: CaptureDevice(syntheticScene: crossingScene(frames: 5), pacing: .asFastAsPossible)))
        try session.addOutput(output)
        try session.startRunning()
        session.waitUntilStopped(timeout: 30)
        output.waitUntilIdle()
        #expect(output.processedFrameCount == 0)
    }

    @Test func aLiveInputSkipsLateFramesInsteadOfQueueingThem() throws {
        // 30 fps in real time at 1280x720 with faces: analysis cannot keep up on every frame of a
        // loaded 2-core machine, and when it cannot, frames are skipped (counted), never queued.
        var scene = crossingScene(frames: 45)
        scene.size = .init(width: 1280, height: 720)
        scene.frameRate = 30
        let session = CaptureSession()
        try session.addInput(CaptureDeviceInput(device: CaptureDevice(syntheticScene: scene, pacing: .realTime)))
        let output = CaptureMetadataOutput()
        try session.addOutput(output)
        try output.setMetadataObjectTypes([.face, .qr])
        try session.startRunning()
        session.waitUntilStopped(timeout: 60)
        output.waitUntilIdle()
        #expect(output.processedFrameCount + output.skippedFrameCount == 45)
        #expect(output.processedFrameCount > 0)
    }
}
