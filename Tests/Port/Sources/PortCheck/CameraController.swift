// A camera app's capture code, written as it would be with AVFoundation (AV prefix dropped).
// Ported to CaptureKit with only the changes the porting guide calls fair (rows 4, 5, 7-13, 16,
// 17 of its table); each is marked `// port: row N`. The original is Original/CameraController.swift.
import Foundation
import CaptureKit

final class CameraController: NSObject, @unchecked Sendable {
    let session = CaptureSession()
    private let sessionQueue = DispatchQueue(label: "session queue")
    private let metadataQueue = DispatchQueue(label: "metadata queue")
    private let videoDataQueue = DispatchQueue(label: "video data queue", qos: .userInitiated)

    private var videoDeviceInput: CaptureDeviceInput!
    private let metadataOutput = CaptureMetadataOutput()
    private let videoDataOutput = CaptureVideoDataOutput()
    private let photoOutput = CapturePhotoOutput()
    let previewLayer = CaptureVideoPreviewLayer()

    private var frameCount = 0
    private var droppedCount = 0
    private var observers: [CaptureSession.EventObservation] = []  // port: row 8
    let photoURL = FileManager.default.temporaryDirectory.appendingPathComponent("photo.jpg")

    // MARK: Session configuration

    func configureSession() {
        session.beginConfiguration()
        session.sessionPreset = .high

        // Default video device.
        guard let videoDevice = try? CaptureDevice(syntheticScene: .portCheck) else {  // port: row 17
            print("Could not find a video device")
            try? session.commitConfiguration()  // port: row 9
            return
        }
        do {
            let videoDeviceInput = try CaptureDeviceInput(device: videoDevice)
            if session.canAddInput(videoDeviceInput) {
                try session.addInput(videoDeviceInput)  // port: row 9
                self.videoDeviceInput = videoDeviceInput
            } else {
                print("Couldn't add video device input to the session.")
                try? session.commitConfiguration()  // port: row 9
                return
            }
        } catch {
            print("Couldn't create video device input: \(error)")
            try? session.commitConfiguration()  // port: row 9
            return
        }

        // Metadata output: faces and QR codes.
        if session.canAddOutput(metadataOutput) {
            try? session.addOutput(metadataOutput)  // port: row 9
            metadataOutput.setMetadataObjectsDelegate(self, queue: metadataQueue)
            metadataOutput.metadataObjectTypes = [.face, .qr]
            metadataOutput.rectOfInterest = CGRect(x: 0, y: 0, width: 1, height: 1)
        }

        // Video data output.
        if session.canAddOutput(videoDataOutput) {
            videoDataOutput.alwaysDiscardsLateVideoFrames = true
            videoDataOutput.videoPixelFormat = .bgra  // port: row 4
            videoDataOutput.setSampleBufferDelegate(self, queue: videoDataQueue)
            try? session.addOutput(videoDataOutput)  // port: row 9
        }

        // Photo output.
        if session.canAddOutput(photoOutput) {
            try? session.addOutput(photoOutput)  // port: row 9
            // port: row 5 (maxPhotoQualityPrioritization: no counterpart)
        }

        do {
            try session.commitConfiguration()  // port: row 9
        } catch {
            print("Could not commit the configuration: \(error)")
        }

        previewLayer.session = session
        previewLayer.videoGravity = .resizeAspectFill
        previewLayer.frame = CGRect(x: 0, y: 0, width: 390, height: 844)
    }

    // MARK: Device configuration

    func focus(at layerPoint: CGPoint) {
        let devicePoint = previewLayer.captureDevicePointConverted(fromLayerPoint: layerPoint)
        print("tap \(layerPoint) -> device point \(devicePoint)")
        let device = videoDeviceInput.device
        do {
            try device.lockForConfiguration()
            if device.isFocusPointOfInterestSupported && device.isFocusModeSupported(.autoFocus) {
                device.focusPointOfInterest = devicePoint
                device.focusMode = .autoFocus
            } else {
                print("focus point of interest not supported by \(device.localizedName)")
            }
            if device.isExposurePointOfInterestSupported && device.isExposureModeSupported(.continuousAutoExposure) {
                device.exposurePointOfInterest = devicePoint
                device.exposureMode = .continuousAutoExposure
            } else {
                print("exposure point of interest not supported by \(device.localizedName)")
            }
            // port: row 7 (isSubjectAreaChangeMonitoringEnabled: no V4L2 counterpart)
            device.unlockForConfiguration()
        } catch {
            print("Could not lock device for configuration: \(error)")
        }
    }

    // MARK: Running

    func addObservers() {
        // port: row 8 (one typed event stream instead of NotificationCenter names and userInfo keys)
        observers.append(session.observeEvents(on: DispatchQueue(label: "session events")) { event in
            switch event {
            case .runtimeError(let error):
                print("Capture session runtime error: \(error)")
            case .wasInterrupted(let reason):
                print("Capture session was interrupted: \(reason)")
            case .interruptionEnded:
                print("Capture session interruption ended")
            default:
                break
            }
        })
    }

    func start() {
        sessionQueue.async {
            self.configureSession()
            self.addObservers()
            do {
                try self.session.startRunning()  // port: row 9
            } catch {
                print("Could not start the session: \(error)")
            }
            print("session running: \(self.session.isRunning)")
        }
    }

    func stop() {
        sessionQueue.sync {
            do {
                try self.session.stopRunning()  // port: row 9
            } catch {
                print("Could not stop the session: \(error)")
            }
            for observer in observers { observer.cancel() }  // port: row 8
            print("stopped after \(frameCount) frames, \(droppedCount) dropped")
        }
    }

    func capturePhoto() {
        sessionQueue.async {
            var settings = CapturePhotoSettings(codec: .jpeg(quality: 90))  // port: rows 10, 11
            settings.flashMode = .off
            do {
                try self.photoOutput.capturePhoto(with: settings, delegate: self)  // port: row 12
            } catch {
                print("Could not capture a photo: \(error)")
            }
        }
    }
}

// MARK: Metadata delegate

extension CameraController: CaptureMetadataOutputObjectsDelegate {
    func metadataOutput(_ output: CaptureMetadataOutput, didOutput metadataObjects: [MetadataObject], from connection: CaptureConnection) {
        for object in metadataObjects {
            if let face = object as? MetadataFaceObject {
                let transformed = previewLayer.transformedMetadataObject(for: face)
                print("face \(face.faceID) bounds \(face.bounds) roll \(face.rollAngle) yaw \(face.yawAngle) layer \(String(describing: transformed?.bounds))")
            } else if let code = object as? MetadataMachineReadableCodeObject {
                print("\(code.type.rawValue) \(code.stringValue ?? "<binary>") corners \(code.corners)")
            }
        }
        let roi = previewLayer.layerRectConverted(fromMetadataOutputRect: output.rectOfInterest)
        _ = roi
    }
}

// MARK: Video data delegate

extension CameraController: CaptureVideoDataOutputSampleBufferDelegate {
    func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {  // port: row 13
        frameCount += 1
        let pixelBuffer = sampleBuffer.pixelBuffer  // port: row 13
        if frameCount % 30 == 1 {
            let width = pixelBuffer.width  // port: row 13
            let height = pixelBuffer.height  // port: row 13
            let time = sampleBuffer.presentationTimeStamp  // port: row 13
            print("frame \(frameCount) \(width)x\(height) at \(time.seconds) s")
        }
    }

    func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection) {  // port: row 13
        droppedCount += 1
    }
}

// MARK: Photo delegate

extension CameraController: CapturePhotoCaptureDelegate {
    func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: Error?) {
        if let error {
            print("Error capturing photo: \(error)")
            return
        }
        guard let data = photo.fileDataRepresentation() else {
            print("No photo data")
            return
        }
        do {
            try data.write(to: photoURL)
            // port: row 16 (no `photo.metadata`: the EXIF is inside the file data)
            print("photo written to \(photoURL.path) (\(data.count) bytes)")
        } catch {
            print("Could not write photo: \(error)")
        }
    }
}
