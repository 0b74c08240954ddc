import ArgumentParser
import CaptureKit
import Foundation
import Logging

/// Where frames come from and how they are shaped; shared by every capturing subcommand.
package struct InputOptions: ParsableArguments {
    package init() {}

    @Option(help: "Camera by index (0 = first camera), device path (/dev/video0) or unique ID.")
    package var device: String?

    @Option(
        name: .customLong("input"),
        help: ArgumentHelp(
            "A video file, an image, a folder of images, a network camera (rtsp://, rtsps://, http(s):// MJPEG), or synthetic:SPEC; scan and faces take several (repeat --input, or give them as arguments) and - (standard input: an image, or a list of paths one per line).",
            discussion: """
                A network camera's credentials come from the URL (rtsp://user:pass@host/path) or, \
                for what the URL lacks, from CVCAM_STREAM_USER and CVCAM_STREAM_PASSWORD; they are \
                never printed. A dropped stream is an interruption, as for an unplugged camera, \
                and is retried after 0.5 s, doubling to 30 s.
                synthetic:SPEC draws a scene with known content, e.g. \
                synthetic:size=640x480,fps=30,frames=90,image=face.jpg,qr=HELLO. Keys: size=WxH, \
                fps=N, frames=N (default: endless), background=bars|noise|black|gray|PATH, \
                image=PATH (moves left to right; repeat for more), qr=TEXT (still, centred; repeat \
                for more), speed=PIXELS_PER_SECOND (default 120), appear=SECONDS (when the \
                images enter; default 0), repeat=SECONDS (they pass again this often).
                """),
        completion: .file(), transform: InputOptions.argumentBytes)
    package var inputs: [String] = []

    /// The one input of a run, or of one part of a run over several (which sets it per input).
    package var input: String? {
        get { inputs.first }
        set { inputs = newValue.map { [$0] } ?? [] }
    }

    @Option(
        name: .customLong("connect-timeout"),
        help: ArgumentHelp("Seconds a network camera may take to connect (0.1 to 3600).", valueName: "SECONDS"))
    package var connectTimeout: Double = 10

    @Option(help: "Session preset.")
    package var preset: SessionPreset?

    @Option(help: "Frame size WxH; must be one the input offers (on a camera, the fastest format of that size).")
    package var size: String?

    @Option(help: "Frame rate for cameras and image folders (frames per second).")
    package var fps: Double?

    @Option(help: "Camera pixel format (default: the fastest that reaches --size and --fps).")
    package var pixelFormat: CameraPixelFormat?

    @Option(
        name: .customLong("set-ctrl"),
        help: ArgumentHelp(
            "Set camera controls by their v4l2-ctl names before streaming (see `cvcam controls`); repeatable.",
            valueName: "name=value[,name=value]"))
    package var setCtrl: [ControlAssignments] = []

    @Option(help: "Rotate frames clockwise, in degrees.")
    package var rotate: Rotation = .upright

    @Flag(help: "Mirror frames left-right (after rotating).")
    package var mirror = false

    @Option(
        name: .customLong("rect-of-interest"),
        help: "Only look inside x,y,w,h, in device space (0…1, top-left origin, unrotated).")
    package var rectOfInterest: String?

    @Option(
        help: ArgumentHelp(
            "Also print boxes in the coordinates of a WxH view (a kiosk's screen; each side 1 to 16384).", valueName: "WxH"))
    package var view: ViewSize?

    @Option(help: "How the video fills --view: fit (letterbox), fill (crop) or stretch.")
    package var gravity: Gravity = .fit

    package enum Pacing: String, EnumerableFlag {
        case realtime, batch
        package static func help(for value: Pacing) -> ArgumentHelp? {
            switch value {
            case .realtime: "Play files at their own frame rate, like a camera (late frames are skipped)."
            case .batch: "Process every frame of a file as fast as possible."
            }
        }
    }

    @Flag package var pacing: Pacing = .batch

    package func validate() throws {
        if device != nil && !inputs.isEmpty {
            throw ValidationError("Use either --device or --input, not both.")
        }
        if input != nil && (pixelFormat != nil || !setCtrl.isEmpty) {
            throw ValidationError("--pixel-format and --set-ctrl apply to cameras, not to --input.")
        }
        if let size, Self.parseSize(size) == nil {
            throw ValidationError("--size must look like 1280x720, each side 1 to 16384 (got '\(size)').")
        }
        try OptionRange.check(fps, OptionRange.framesPerSecond, "--fps")
        try OptionRange.check(connectTimeout, Self.connectTimeoutRange, "--connect-timeout", unit: " s")
        if let input, NetworkStreamURL.isNetworkStream(input) {
            // Parsed here so a bad address is a usage error (64); the message is redacted.
            do { _ = try streamURL(input) } catch { throw ValidationError(error.message) }
            if size != nil || fps != nil {
                throw ValidationError(
                    "--size and --fps do not apply to a network camera: its size and rate are set on the camera.")
            }
        }
        if let rectOfInterest, Self.parseRect(rectOfInterest) == nil {
            throw ValidationError(
                "--rect-of-interest must be x,y,w,h: four numbers in 0…1 with w and h above 0, x+w ≤ 1 and y+h ≤ 1 (got '\(rectOfInterest)').")
        }
        // The scene is parsed here so a bad spec is a usage error (64), before anything opens.
        for input in inputs { try Self.validateSynthetic(input) }
    }

    /// A `synthetic:` spec is parsed before anything opens, so a bad one is a usage error (64).
    package static func validateSynthetic(_ input: String) throws {
        guard input.hasPrefix("synthetic:") else { return }
        do { _ = try SyntheticSpec.parse(String(input.dropFirst("synthetic:".count))) } catch {
            throw ValidationError("\(error)")
        }
    }

    /// For the commands that read one input (snap, watch, record): several --input, or standard
    /// input, are refused.
    package func requireSingleInput(_ command: String) throws {
        if inputs.count > 1 {
            throw ValidationError("\(command) reads one input (got \(inputs.count) --input options); run it once per input.")
        }
        if inputs.first == "-" {
            throw ValidationError("\(command) cannot read standard input (--input -); give it a file, a folder or a camera.")
        }
    }

    /// The range `--connect-timeout` accepts, in seconds.
    package static let connectTimeoutRange: ClosedRange<Double> = 0.1...3600

    /// A network camera's address, with credentials the URL lacks taken from CVCAM_STREAM_USER
    /// and CVCAM_STREAM_PASSWORD.
    package func streamURL(_ text: String) throws(CaptureError) -> NetworkStreamURL {
        let environment = ProcessInfo.processInfo.environment
        return try NetworkStreamURL(
            text, user: environment["CVCAM_STREAM_USER"], password: environment["CVCAM_STREAM_PASSWORD"])
    }

    /// The start line for a network camera (stderr): what the stream delivers, and where the rate came from.
    package static func streamLine(_ stream: NetworkStreamSource) -> String {
        let rate = String(format: "%.2f", stream.framesPerSecond)
        let origin = stream.frameRateIsMeasured ? "measured over the first frames" : "reported by the stream"
        return "stream: \(stream.url.redacted) \(stream.info.codec) \(stream.info.dimensions) at \(rate) fps (\(origin))"
    }

    package static func parseSize(_ text: String) -> CaptureDevice.Dimensions? {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]),
            OptionRange.pixels.contains(w), OptionRange.pixels.contains(h)
        else { return nil }
        return .init(width: w, height: h)
    }

    package static func parseRect(_ text: String) -> CGRect? {
        // Every field must be a number: "0.1,abc,0.2,0.3,0.4" is refused, not read as four numbers.
        let fields = text.split(separator: ",", omittingEmptySubsequences: false)
        let numbers = fields.compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard fields.count == 4, numbers.count == 4, numbers.allSatisfy({ $0 >= 0 && $0 <= 1 }), numbers[2] > 0, numbers[3] > 0,
            numbers[0] + numbers[2] <= 1.000001, numbers[1] + numbers[3] <= 1.000001
        else { return nil }
        return CGRect(x: numbers[0], y: numbers[1], width: numbers[2], height: numbers[3])
    }

    /// The rectangle of interest, or the whole frame.
    package var regionOfInterest: CGRect {
        rectOfInterest.flatMap(Self.parseRect) ?? CGRect(x: 0, y: 0, width: 1, height: 1)
    }

    package var framePacing: FramePacing { pacing == .realtime ? .realTime : .asFastAsPossible }

    /// `size` as frames come out of a connection turned by --rotate.
    package func oriented(_ size: CaptureDevice.Dimensions) -> CaptureDevice.Dimensions {
        rotate.degrees % 180 == 0 ? size : .init(width: size.height, height: size.width)
    }

    /// Applies --rotate and --mirror to `output`'s video connection (once it is in a session).
    package func orient(_ output: CaptureOutput) {
        guard let connection = output.connection(with: .video) else { return }
        connection.videoRotationAngle = Double(rotate.degrees)
        connection.isVideoMirrored = mirror
    }

    /// A path option's `value` with the bytes it had in argv (the `transform` of `--input`, `-o` and `--dir`).
    /// Swift decodes argv as UTF-8 and replaces bytes that are not (a Latin-1 `caf\xE9.png`) with
    /// U+FFFD, naming a file that does not exist; the raw argument (or `--name=` value) that
    /// decodes to `value` is carried whole (`FilePathBytes`). Two arguments differing only in such
    /// bytes resolve to the first.
    package static func argumentBytes(_ value: String) -> String {
        guard value.unicodeScalars.contains("\u{FFFD}") else { return value }
        for i in 1..<Int(CommandLine.argc) {
            guard let arg = CommandLine.unsafeArgv[i] else { continue }
            let raw = UnsafeRawBufferPointer(start: arg, count: strlen(arg)).map { $0 }
            var candidates = [raw]
            if raw.starts(with: Array("--".utf8)), let eq = raw.firstIndex(of: UInt8(ascii: "=")) {
                candidates.append(Array(raw[(eq + 1)...]))
            }
            if let match = candidates.first(where: { String(decoding: $0, as: UTF8.self) == value }) {
                return FilePathBytes.string(match)
            }
        }
        return value
    }

    /// What kind of input the options name, for summaries ("camera", "file", "folder", "synthetic").
    package var inputKind: String {
        guard let input else { return "camera" }
        if input.hasPrefix("synthetic:") { return "synthetic" }
        if NetworkStreamURL.isNetworkStream(input) { return "stream" }
        var st = stat()
        if FilePathBytes.withCString(input, { stat($0, &st) }) == 0, st.st_mode & S_IFMT == S_IFDIR { return "folder" }
        return ImageFolderSource.imageExtensions.contains((input as NSString).pathExtension.lowercased())
            ? "image" : "file"
    }

    /// Whether the input ends by itself (files, folders, finite synthetic scenes).
    package var isFinite: Bool { inputKind != "camera" && inputKind != "stream" }

    /// Opens the device the options name.
    package func makeDevice() throws -> CaptureDevice {
        let device: CaptureDevice
        if let input {
            if input.hasPrefix("synthetic:") {
                let scene = try SyntheticSpec.parse(String(input.dropFirst("synthetic:".count)))
                device = try CaptureDevice(syntheticScene: scene, pacing: framePacing)
            } else if NetworkStreamURL.isNetworkStream(input) {
                device = try CaptureDevice(
                    networkStream: try streamURL(input), timeouts: NetworkStreamTimeouts(connect: connectTimeout))
                if let stream = device.source as? NetworkStreamSource { TerminalText.printLine(Self.streamLine(stream)) }
            } else if inputKind == "folder" || inputKind == "image" {
                device = try CaptureDevice(
                    imagesAtPath: input, frameRate: fps ?? 10, pacing: framePacing,
                    onSkippedImage: { Logger(label: "cvcam.input").warning("skipped \($0)") })
            } else {
                device = try CaptureDevice(videoFileAtPath: input, pacing: framePacing)
            }
        } else {
            device = try Self.camera(matching: self.device)
        }
        try apply(to: device)
        return device
    }

    package static func camera(matching selector: String?) throws -> CaptureDevice {
        let cameras = CaptureDevice.DiscoverySession(deviceTypes: [.external], mediaType: .video, position: .unspecified)
            .devices
        guard let selector else {
            guard let first = cameras.first else { throw cameraUnavailable(matching: nil) ?? CLIError.noCamera }
            return first
        }
        if let index = Int(selector) {
            guard cameras.indices.contains(index) else {
                throw cameraUnavailable(matching: nil) ?? CLIError.message(
                    "No camera with index \(selector): \(cameras.count) camera(s) found. Run `cvcam devices` to list them.")
            }
            return cameras[index]
        }
        if let match = cameras.first(where: { $0.uniqueID == selector || $0.uniqueID.hasSuffix(selector) }) {
            return match
        }
        // A device node, also through a symlink such as /dev/v4l/by-id/….
        let node = URL(fileURLWithPath: selector).resolvingSymlinksInPath().path
        if let match = cameras.first(where: { $0.source.capabilities?.devicePath == node }) {
            return match
        }
        throw cameraUnavailable(matching: selector)
            ?? CLIError.message("No camera matches '\(selector)'. Run `cvcam devices` to list cameras.")
    }

    /// Applies --size, --fps, --pixel-format and --set-ctrl (CameraOptions.swift).
    private func apply(to device: CaptureDevice) throws { try applyCameraSettings(to: device) }

    /// The preset to use: --preset, or inputPriority when --size, --fps or --pixel-format chose a format.
    package var sessionPreset: SessionPreset {
        if let preset { return preset }
        return size != nil || (fps != nil && input == nil) || pixelFormat != nil ? .inputPriority : .high
    }
}

/// Output shape options shared by every subcommand.
package struct OutputOptions: ParsableArguments {
    package init() {}

    @Flag(help: "Print NDJSON: one JSON event per line (schema documented in the README).")
    package var json = false

    @Flag(
        name: .shortAndLong,
        help: "Print only the data: no start line, drop reports, summary or status line (errors and warnings still go to stderr).")
    package var quiet = false

    @Flag(name: .shortAndLong, help: "Also log cvcam's debug lines, and FFmpeg's and OpenCV's own warnings and errors, to stderr.")
    package var verbose = false

    @Option(
        help: ArgumentHelp(
            "Every SECONDS, report frames, fps, skipped frames, detection time per frame (p50, p99), CPU and memory: a `stats:` line on stderr, or a `stats` event with --json.",
            valueName: "seconds"))
    package var statsInterval: Double?

    package func validate() throws {
        try OptionRange.check(statsInterval, 0.1...86_400, "--stats-interval", unit: " seconds")
    }
}

/// Errors the CLI reports in one sentence.
package enum CLIError: Error, CustomStringConvertible {
    case noCamera
    case noFaceModel
    case message(String)

    package var description: String {
        switch self {
        case .noCamera:
            "No camera found. Try the bundled demo: `Tools/demo`, or pass --input with a video file, an image folder or synthetic:SPEC."
        case .noFaceModel:
            "No face model could be loaded: `cvcam doctor` shows where cvcam looked; install the models there or pass --models FOLDER (or set CVCAM_MODELS)."
        case .message(let text): text
        }
    }
}
