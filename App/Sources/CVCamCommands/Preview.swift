import ArgumentParser
import CaptureJobs
import CaptureKit
import CapturePreview
import Foundation
import Logging

/// `cvcam preview`: one input served to the browser, with its faces and codes drawn through
/// `CaptureVideoPreviewLayer`, and clicks and drags sent back through the same conversions.
///
/// Threading: ArgumentParser runs it on the main thread, which then waits in the capture job;
/// the server runs on its own threads (`PreviewServer`).
struct Preview: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a live preview in the browser: the video, its faces and codes, click and drag to steer.",
        discussion: """
            Opens the input and serves http://127.0.0.1:8080/ (see --listen): the video as MJPEG \
            with an overlay of face boxes (faceID and score), code outlines with their payloads \
            and the rect of interest. The page tells the server its view size and gravity and \
            sets the connection's rotation and mirroring; every box is converted on the server by \
            CaptureVideoPreviewLayer, so the page shows the library's own geometry. A click is \
            converted with captureDevicePointConverted(fromLayerPoint:) and becomes the focus and \
            exposure point of interest where the camera has them (UVC 1.5 region of interest; \
            otherwise the page says they are unsupported and shows the device point); a \
            drag becomes the rect of interest; a button takes a photo to download. With \
            --motion, the moving regions are drawn too (dashed boxes, at most \(PreviewMessage.maximumMotionRegions) a frame), \
            faces and codes are looked for at the full rate only while something moves, and \
            motion starts and ends are listed with the events.

            The URL is printed on stdout ("preview: URL"). Files and synthetic scenes play at \
            their own frame rate (--batch does not apply). The server runs until the input ends \
            (a file, a folder or a finite synthetic scene) or SIGINT/SIGTERM.

            Security: loopback only by default. Any other --listen address needs --http-token or \
            --http-token-file; open the page once as /?token=TOKEN (a cookie carries it from \
            then on) or send Authorization: Bearer TOKEN. Requests from other origins are refused.
            The server answers only to its own names (127.0.0.1, localhost, [::1], the --listen \
            host) and those given with --allow-host, so a web page cannot reach it through DNS \
            rebinding (421 otherwise); beyond loopback, with a token, it answers to any name \
            unless --allow-host is given.

            Limits (see Docs/security.md): request line 8 KiB (414), request head 32 KiB and 100 \
            header fields (431), GET and HEAD only (405; unknown methods 501), no request body \
            (413); a request head must arrive within 10 s (408), an idle connection closes after \
            60 s; 32 connections per client address and 256 in all (503).

            Exit codes: 0 ok; 1 runtime error (the input failed, or the address cannot be bound); \
            64 usage error.
            """)

    @OptionGroup var input: InputOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var faceOptions: FaceOptions
    @OptionGroup(title: "Motion") var motion: MotionOptions

    @Option(
        help: ArgumentHelp(
            "Address to serve on (port 0: any free port, printed). Beyond loopback a token is required.",
            valueName: "host:port"))
    var listen: String = ListenAddress.defaultValue.description

    @Option(
        help: ArgumentHelp(
            "Token every request must carry (8 to 256 characters: letters, digits, - . _ ~). Visible in `ps`; prefer --http-token-file.",
            valueName: "token"))
    var httpToken: String?

    @Option(
        help: ArgumentHelp("File holding the token (its first line).", valueName: "path"), completion: .file())
    var httpTokenFile: String?

    @Option(
        name: .customLong("allow-host"),
        help: ArgumentHelp(
            "Also answer requests for this host name or address (e.g. a name for this machine, or a proxy's); repeatable; * answers any.",
            valueName: "name"))
    var allowHosts: [String] = []

    @Option(
        help: ArgumentHelp(
            "Largest size of the streamed video; frames are scaled down to fit, never up. Default: the frame's own size.",
            valueName: "WxH"))
    var streamSize: ViewSize?

    @Option(
        help: ArgumentHelp(
            "JPEG quality of re-encoded video frames, 1 to 100. An MJPEG camera's own frames pass through unchanged when neither rotated, mirrored nor scaled.",
            valueName: "quality"))
    var streamQuality: Int = 70

    @Option(help: ArgumentHelp("Most frames a second sent to browsers, 0.1 to 120.", valueName: "fps"))
    var streamFps: Double = 15

    /// The camera's name in the page's path (`/cameras/camera`).
    static let cameraName = "camera"

    func validate() throws {
        try input.requireSingleInput("preview")
        guard let address = ListenAddress(listen) else {
            throw ValidationError(
                "--listen must be HOST:PORT, [IPv6]:PORT or :PORT with a port from 0 to 65535 (got '\(TerminalText.escaped(listen))').")
        }
        if httpToken != nil && httpTokenFile != nil {
            throw ValidationError("Use either --http-token or --http-token-file, not both.")
        }
        let token = try Self.token(httpToken, file: httpTokenFile)
        if !address.isLoopback && token == nil {
            throw ValidationError(
                "--listen \(address) can be reached from other machines: give --http-token or --http-token-file, or listen on 127.0.0.1.")
        }
        for name in allowHosts where !HostAllowlist.isValidName(name) {
            throw ValidationError(
                "--allow-host takes a host name or an IP address without a port, or * (got '\(TerminalText.escaped(name))').")
        }
        try OptionRange.check(streamQuality, 1...100, "--stream-quality")
        try OptionRange.check(streamFps, 0.1...120, "--stream-fps")
    }

    /// The token from `--http-token` or the first line of `--http-token-file`, checked.
    static func token(_ value: String?, file: String?) throws -> String? {
        var token = value
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ValidationError("--http-token-file: cannot read \(TerminalText.escaped(file)); check the path and its permissions.")
            }
            token = PreviewToken.firstLine(data)
        }
        guard let token else { return nil }
        Redaction.remember(token)
        if let problem = PreviewToken.problem(token) { throw ValidationError("The HTTP token \(problem).") }
        return token
    }

    func run() throws {
        MallocArenas.limit()
        let token = try Self.token(httpToken, file: httpTokenFile)
        let address = ListenAddress(listen) ?? .defaultValue
        // A preview is watched as it happens: files and synthetic scenes play at their own
        // rate, as a camera would, whatever --batch says.
        var live = input
        live.pacing = .realtime
        let job = try CaptureJob(input: live, output: output)

        let video = CaptureVideoDataOutput()
        faceOptions.applyModelsFolder()
        // As every face command, the preview opts in to the Haar cascade when YuNet is missing (with a warning).
        let metadata = CaptureMetadataOutput(
            faceDetection: faceOptions.detection(for: input).configuration, allowsHaarCascadeFallback: true)
        let wanted = [MetadataObjectType.face, .qr].filter(metadata.availableMetadataObjectTypes.contains)
        if !wanted.contains(.face) { TerminalText.printLine("cvcam: warning: \(CLIError.noFaceModel)") }
        try metadata.setMetadataObjectTypes(wanted)
        metadata.rectOfInterest = input.regionOfInterest
        metadata.faceScanInterval = faceOptions.faceScanInterval
        metadata.codeRepeatInterval = 1
        metadata.motionDetection = motion.settings()
        let photos = CapturePhotoOutput()
        try job.add(video)
        try job.add(metadata)
        try job.add(photos)

        let camera = PreviewCamera(
            name: Self.cameraName, input: job.input, video: video, metadata: metadata, photos: photos,
            streamSettings: .init(
                maximumSize: streamSize.map { .init(width: $0.width, height: $0.height) }, quality: streamQuality,
                framesPerSecond: streamFps))
        var logger = Logger(label: "cvcam.preview")
        logger.logLevel = output.verbose ? .debug : .warning
        let server = PreviewServer(cameras: [camera], token: token, allowedHosts: allowHosts, logger: logger)
        let running = try server.start(on: address)
        let shown = ListenAddress(host: address.host, port: running.port)
        let url = "http://\(shown)\(PreviewServer.path(of: camera))"
        let line = output.json ? PreviewMessage.json(ListeningEvent(url: url)) : "preview: \(url)"
        try? FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8))

        job.reportDrops(reason: "frameWasLate") { metadata.skippedFrameCount }
        try job.run { [job] in
            String(
                format: "%.1f fps  viewers %d  streamed %d  skipped %d", Double(job.session.capturedFrameCount) / max(job.elapsed, 0.001),
                camera.stream.viewerCount, camera.stream.encodedFrameCount + camera.stream.passedThroughFrameCount,
                metadata.skippedFrameCount)
        }
        job.finishDropReports()
        camera.stream.finish()
        camera.observer.finish()
        running.stop()
        job.reportRuntimeError()
        if job.runtimeError != nil { throw ExitCode(ExitStatus.runtimeError) }
    }

    /// `--json`'s line saying where the page is.
    struct ListeningEvent: Encodable {
        let event = "listening"
        var url: String
    }
}

extension Preview: HasOutputOptions {}
