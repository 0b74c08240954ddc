import CaptureKit
import Foundation
import Testing

/// A face as a detector reports it: the person's right eye left of their left eye in the
/// (unmirrored) frame, rolled 10° clockwise, turned 20° to the image's right.
private func previewLayerFace(input: CaptureInput.ID) -> MetadataFaceObject {
    MetadataFaceObject(
        bounds: CGRect(x: 0.2, y: 0.3, width: 0.3, height: 0.4), faceID: 7, hasRollAngle: true, rollAngle: 10,
        hasYawAngle: true, yawAngle: 20,
        landmarks: [
            CGPoint(x: 0.28, y: 0.4), CGPoint(x: 0.42, y: 0.4), CGPoint(x: 0.35, y: 0.5),
            CGPoint(x: 0.3, y: 0.6), CGPoint(x: 0.4, y: 0.6),
        ],
        confidence: 0.9, time: MediaTime(value: 3, timescale: 30), inputID: input)
}

/// A QR code with its corners clockwise from its own top-left, as ZBar orders them.
private func previewLayerCode(input: CaptureInput.ID) -> MetadataMachineReadableCodeObject {
    MetadataMachineReadableCodeObject(
        type: .qr, bounds: CGRect(x: 0.25, y: 0.25, width: 0.25, height: 0.25), stringValue: "hello",
        payload: Array("hello".utf8),
        corners: [CGPoint(x: 0.25, y: 0.25), CGPoint(x: 0.5, y: 0.25), CGPoint(x: 0.5, y: 0.5), CGPoint(x: 0.25, y: 0.5)],
        quality: 1, time: MediaTime(value: 3, timescale: 30), inputID: input)
}

/// A metadata type CaptureKit does not define.
private struct PreviewLayerOtherObject: MetadataObject {
    var type: MetadataObjectType { MetadataObjectType(rawValue: "other") }
    var bounds: CGRect
    var time: MediaTime
    var inputID: CaptureInput.ID
}

@Suite("PreviewLayer metadata objects and live connections")
struct PreviewLayerMetadataTests {
    let input = CaptureInput.ID(rawValue: 1001)
    let otherInput = CaptureInput.ID(rawValue: 1002)

    /// A mirrored front camera, 640×480 shown at exactly twice its size.
    func frontCamera(rotation: Double = 0, bounds: CGRect = CGRect(x: 0, y: 0, width: 1280, height: 960)) throws
        -> CaptureVideoPreviewLayer
    {
        try CaptureVideoPreviewLayer(
            bounds: bounds, videoGravity: .resizeAspect, videoRotationAngle: rotation, isVideoMirrored: true,
            frameDimensions: .init(width: 640, height: 480), inputID: input)
    }

    @Test func mirroredFrontCameraFaceKeepsLandmarkOrder() throws {
        let face = previewLayerFace(input: input)
        let t = try #require(try frontCamera().transformedMetadataObject(for: face))
        // x → (1 − x)·1280, y → y·960, index order kept.
        let expected = [
            CGPoint(x: 921.6, y: 384), CGPoint(x: 742.4, y: 384), CGPoint(x: 832, y: 480),
            CGPoint(x: 896, y: 576), CGPoint(x: 768, y: 576),
        ]
        #expect(t.landmarks.count == 5)
        for (got, want) in zip(t.landmarks, expected) {
            #expect(previewLayerClose(got, want), "got \(got), want \(want)")
        }
        // The person's right eye (index 0) is now on the layer's right, as in a mirror.
        #expect(face.landmarks[0].x < face.landmarks[1].x)
        #expect(t.landmarks[0].x > t.landmarks[1].x)
        // Bounds x 0.2…0.5 mirror to 0.5…0.8.
        #expect(previewLayerClose(t.bounds, CGRect(x: 640, y: 288, width: 384, height: 384)))
        #expect(t.rollAngle == -10)
        #expect(t.yawAngle == -20)
        #expect(t.faceID == face.faceID && t.confidence == face.confidence && t.time == face.time)
        #expect(t.inputID == face.inputID && t.hasRollAngle && t.hasYawAngle)
    }

    /// Portrait kiosk: rotated 90° then mirrored, which transposes the frame:
    /// (x, y) → (1 − y, x) → (y, x) → (480·y, 640·x) in a 480×640 view.
    @Test func mirroredRotatedFaceTransposes() throws {
        let face = previewLayerFace(input: input)
        let layer = try frontCamera(rotation: 90, bounds: CGRect(x: 0, y: 0, width: 480, height: 640))
        let t = try #require(layer.transformedMetadataObject(for: face))
        let expected = [
            CGPoint(x: 192, y: 179.2), CGPoint(x: 192, y: 268.8), CGPoint(x: 240, y: 224),
            CGPoint(x: 288, y: 192), CGPoint(x: 288, y: 256),
        ]
        for (got, want) in zip(t.landmarks, expected) {
            #expect(previewLayerClose(got, want), "got \(got), want \(want)")
        }
        #expect(previewLayerClose(t.bounds, CGRect(x: 144, y: 128, width: 192, height: 192)))
        #expect(t.rollAngle == -100)
    }

    @Test func mirroredCodeCornersRunCounterClockwise() throws {
        let code = previewLayerCode(input: input)
        let t = try #require(try frontCamera().transformedMetadataObject(for: code))
        let expected = [CGPoint(x: 960, y: 240), CGPoint(x: 640, y: 240), CGPoint(x: 640, y: 480), CGPoint(x: 960, y: 480)]
        for (got, want) in zip(t.corners, expected) {
            #expect(previewLayerClose(got, want), "got \(got), want \(want)")
        }
        #expect(previewLayerSignedArea(code.corners) > 0)  // clockwise on screen
        #expect(previewLayerSignedArea(t.corners) < 0)  // counter-clockwise
        #expect(previewLayerClose(t.bounds, CGRect(x: 640, y: 240, width: 320, height: 240)))
        #expect(t.stringValue == "hello" && t.payload == code.payload && t.type == .qr && t.quality == 1)
    }

    /// Every rotation and mirroring: corners map point by point, bounds is the box of the
    /// converted corners, winding flips only with mirroring.
    @Test(arguments: [0.0, 90, 180, 270], [false, true])
    func codeCornersPointByPoint(rotation: Double, mirrored: Bool) throws {
        let layer = try CaptureVideoPreviewLayer(
            bounds: CGRect(x: 0, y: 0, width: 700, height: 300), videoGravity: .resizeAspectFill,
            videoRotationAngle: rotation, isVideoMirrored: mirrored, frameDimensions: .init(width: 1280, height: 720),
            inputID: input)
        let code = MetadataMachineReadableCodeObject(
            type: .qr, bounds: CGRect(x: 0.1, y: 0.2, width: 0.5, height: 0.6), stringValue: nil, payload: [0xFF],
            corners: [CGPoint(x: 0.2, y: 0.2), CGPoint(x: 0.6, y: 0.3), CGPoint(x: 0.5, y: 0.8), CGPoint(x: 0.1, y: 0.7)],
            quality: 1, time: .zero, inputID: input)
        let t = try #require(layer.transformedMetadataObject(for: code))
        for (got, original) in zip(t.corners, code.corners) {
            #expect(got == layer.layerPointConverted(fromCaptureDevicePoint: original))
        }
        let xs = t.corners.map(\.x), ys = t.corners.map(\.y)
        let box = CGRect(x: xs.min()!, y: ys.min()!, width: xs.max()! - xs.min()!, height: ys.max()! - ys.min()!)
        #expect(previewLayerClose(t.bounds, box), "bounds \(t.bounds), corners' box \(box)")
        #expect((previewLayerSignedArea(t.corners) < 0) == mirrored)
    }

    /// On a square frame shown without stretching, the transformed roll is the angle of the
    /// transformed eye line (read from the image-left eye to the image-right eye).
    @Test(arguments: [0.0, 90, 180, 270], [false, true])
    func rollFollowsTransformedLandmarks(rotation: Double, mirrored: Bool) throws {
        let layer = try CaptureVideoPreviewLayer(
            bounds: CGRect(x: 0, y: 0, width: 900, height: 500), videoGravity: .resizeAspect,
            videoRotationAngle: rotation, isVideoMirrored: mirrored, frameDimensions: .init(width: 480, height: 480),
            inputID: input)
        for roll in stride(from: -170.0, through: 170, by: 20) {
            let r = roll * .pi / 180, c = CGPoint(x: 0.5, y: 0.4)
            let face = MetadataFaceObject(
                bounds: CGRect(x: 0.3, y: 0.2, width: 0.4, height: 0.5), faceID: 1, hasRollAngle: true, rollAngle: roll,
                landmarks: [
                    CGPoint(x: c.x - 0.1 * cos(r), y: c.y - 0.1 * sin(r)), CGPoint(x: c.x + 0.1 * cos(r), y: c.y + 0.1 * sin(r)),
                ],
                confidence: 1, time: .zero, inputID: input)
            let t = try #require(layer.transformedMetadataObject(for: face))
            // Mirrored, the person's left eye (index 1) is the one on the image's left.
            let (from, to) = mirrored ? (t.landmarks[1], t.landmarks[0]) : (t.landmarks[0], t.landmarks[1])
            let seen = atan2(Double(to.y - from.y), Double(to.x - from.x)) * 180 / .pi
            var difference = (t.rollAngle - seen).truncatingRemainder(dividingBy: 360)
            if difference > 180 { difference -= 360 } else if difference < -180 { difference += 360 }
            #expect(abs(difference) < 1e-9, "roll \(roll): transformed \(t.rollAngle), eye line \(seen)")
            #expect(t.rollAngle > -180 && t.rollAngle <= 180)
        }
    }

    @Test func objectsFromAnotherInputAreNil() throws {
        let layer = try frontCamera()
        #expect(layer.transformedMetadataObject(for: previewLayerFace(input: otherInput)) == nil)
        #expect(layer.transformedMetadataObject(for: previewLayerCode(input: otherInput)) == nil)
        let mixed: [any MetadataObject] = [previewLayerFace(input: otherInput), previewLayerCode(input: otherInput)]
        #expect(mixed.compactMap(layer.transformedMetadataObject(for:)).isEmpty)
        #expect(layer.transformedMetadataObject(for: previewLayerFace(input: input)) != nil)
        #expect(layer.transformedMetadataObject(for: previewLayerCode(input: input)) != nil)
    }

    @Test func layerWithoutInputAcceptsEveryInput() throws {
        let layer = try CaptureVideoPreviewLayer(
            bounds: CGRect(x: 0, y: 0, width: 640, height: 480), frameDimensions: .init(width: 640, height: 480))
        #expect(layer.transformedMetadataObject(for: previewLayerFace(input: input)) != nil)
        #expect(layer.transformedMetadataObject(for: previewLayerFace(input: otherInput)) != nil)
    }

    @Test func mixedArraysDispatchToTheConcreteConversions() throws {
        let layer = try frontCamera()
        let face = previewLayerFace(input: input), code = previewLayerCode(input: input)
        let objects: [any MetadataObject] = [face, code]
        let transformed = objects.compactMap(layer.transformedMetadataObject(for:))
        #expect(transformed.count == 2)
        #expect(transformed[0] as? MetadataFaceObject == layer.transformedMetadataObject(for: face))
        #expect(transformed[1] as? MetadataMachineReadableCodeObject == layer.transformedMetadataObject(for: code))
        let other = PreviewLayerOtherObject(bounds: CGRect(x: 0, y: 0, width: 1, height: 1), time: .zero, inputID: input)
        #expect(layer.transformedMetadataObject(for: other) == nil)
    }

    /// A synthetic 640×480 camera (with a 640×360 format too) in a session with a video data
    /// output, and that output's connection.
    func syntheticCamera() throws -> (CaptureDevice, CaptureDeviceInput, CaptureSession, CaptureConnection) {
        let scene = SyntheticScene(
            size: .init(width: 640, height: 480), frameCount: 1, additionalSizes: [.init(width: 640, height: 360)])
        let device = try CaptureDevice(syntheticScene: scene, pacing: .asFastAsPossible)
        let deviceInput = try CaptureDeviceInput(device: device)
        let session = CaptureSession()
        try session.addInput(deviceInput)
        let output = CaptureVideoDataOutput()
        try session.addOutput(output)
        let connection = try #require(output.connection(with: .video))
        return (device, deviceInput, session, connection)
    }

    /// A layer made from a connection follows later changes to the connection and the
    /// device's active format.
    @Test func liveLayerFollowsConnectionAndActiveFormat() throws {
        let (device, deviceInput, _, connection) = try syntheticCamera()

        let layer = try CaptureVideoPreviewLayer(
            connection: connection, input: deviceInput, bounds: CGRect(x: 0, y: 0, width: 640, height: 480))
        #expect(layer.inputID == deviceInput.id)
        #expect(layer.connection === connection)
        #expect(layer.frameDimensions == .init(width: 640, height: 480))
        let p = CGPoint(x: 0.25, y: 0.125)
        #expect(previewLayerClose(layer.layerPointConverted(fromCaptureDevicePoint: p), CGPoint(x: 160, y: 60)))

        // Rotated 90° and mirrored: displayed (0.125, 0.25); the 480×640 frame fits at
        // scale 0.75 as 360×480 at x = 140 → (140 + 45, 120).
        connection.videoRotationAngle = 90
        connection.isVideoMirrored = true
        #expect(layer.videoRotationAngle == 90 && layer.isVideoMirrored)
        #expect(previewLayerClose(layer.layerPointConverted(fromCaptureDevicePoint: p), CGPoint(x: 185, y: 120)))

        // Back to 0°, unmirrored, and a 16:9 format: letterboxed to 640×360 at y = 60.
        connection.videoRotationAngle = 0
        connection.isVideoMirrored = false
        try device.lockForConfiguration()
        try device.setActiveFormat(try #require(device.formats.first { $0.dimensions == .init(width: 640, height: 360) }))
        device.unlockForConfiguration()
        #expect(layer.frameDimensions == .init(width: 640, height: 360))
        #expect(previewLayerClose(layer.layerPointConverted(fromCaptureDevicePoint: p), CGPoint(x: 160, y: 105)))

        // Faces from this input convert; faces from elsewhere do not.
        #expect(layer.transformedMetadataObject(for: previewLayerFace(input: deviceInput.id)) != nil)
        #expect(layer.transformedMetadataObject(for: previewLayerFace(input: otherInput)) == nil)
    }

    /// `snapshot()`: one reading of a live layer, kept while the connection and format change;
    /// its conversions are the live layer's at that moment.
    @Test func snapshotKeepsOneReading() throws {
        let (device, deviceInput, session, connection) = try syntheticCamera()
        connection.videoRotationAngle = 90
        connection.isVideoMirrored = true
        let bounds = CGRect(x: 0, y: 0, width: 640, height: 480)
        for live in [
            try CaptureVideoPreviewLayer(connection: connection, input: deviceInput, bounds: bounds, videoGravity: .resizeAspectFill),
            {
                let l = CaptureVideoPreviewLayer(session: session)
                l.frame = bounds
                l.videoGravity = .resizeAspectFill
                return l
            }(),
        ] {
            let fixed = live.snapshot()
            let p = CGPoint(x: 0.25, y: 0.125)
            let face = previewLayerFace(input: deviceInput.id)
            #expect(fixed.layerPointConverted(fromCaptureDevicePoint: p) == live.layerPointConverted(fromCaptureDevicePoint: p))
            #expect(fixed.transformedMetadataObject(for: face) == live.transformedMetadataObject(for: face))
            #expect(fixed.inputID == deviceInput.id && fixed.connection == nil && fixed.session == nil)
            #expect(fixed.description == live.description)
            let before = fixed.layerPointConverted(fromCaptureDevicePoint: p)

            connection.videoRotationAngle = 0
            connection.isVideoMirrored = false
            try device.lockForConfiguration()
            try device.setActiveFormat(try #require(device.formats.first { $0.dimensions == .init(width: 640, height: 360) }))
            device.unlockForConfiguration()
            #expect(live.layerPointConverted(fromCaptureDevicePoint: p) != before)
            #expect(fixed.layerPointConverted(fromCaptureDevicePoint: p) == before)
            #expect(fixed.videoRotationAngle == 90 && fixed.isVideoMirrored && fixed.frameDimensions == .init(width: 640, height: 480))
            #expect(fixed.transformedMetadataObject(for: previewLayerFace(input: otherInput)) == nil)

            connection.videoRotationAngle = 90
            connection.isVideoMirrored = true
            try device.lockForConfiguration()
            try device.setActiveFormat(try #require(device.formats.first { $0.dimensions == .init(width: 640, height: 480) }))
            device.unlockForConfiguration()
        }
        // Without geometry (no size yet): a snapshot without geometry, not a guess.
        let unsized = CaptureVideoPreviewLayer(session: session).snapshot()
        #expect(!unsized.hasGeometry)
        #expect(unsized.layerPointConverted(fromCaptureDevicePoint: .zero).x.isNaN)
        #expect(!CaptureVideoPreviewLayer().snapshot().hasGeometry)
    }

    @Test func liveLayerRejectsAnotherInput() throws {
        let scene = SyntheticScene(size: .init(width: 320, height: 240), frameCount: 1)
        let inSession = try CaptureDeviceInput(device: try CaptureDevice(syntheticScene: scene, pacing: .asFastAsPossible))
        let elsewhere = try CaptureDeviceInput(device: try CaptureDevice(syntheticScene: scene, pacing: .asFastAsPossible))
        let session = CaptureSession()
        try session.addInput(inSession)
        let output = CaptureVideoDataOutput()
        try session.addOutput(output)
        let connection = try #require(output.connection(with: .video))
        #expect {
            try CaptureVideoPreviewLayer(connection: connection, input: elsewhere, bounds: CGRect(x: 0, y: 0, width: 320, height: 240))
        } throws: { error in
            (error as? CaptureError)?.code == .invalidPreviewGeometry
        }
    }
}
