import ArgumentParser
import CaptureJobs
import CaptureKit
import CapturePreview
import CaptureServe
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// `cvcam serve`: many cameras in one daemon, events and snapshots on MQTT.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the cameras of a configuration file in one daemon, publishing events and snapshots to an MQTT broker.",
        discussion: """
            FILE (YAML) names the broker and the cameras; each camera runs its own session with \
            faces, codes, snapshot rules and optional recording, publishes to \
            <prefix>/<camera>/… (events, faces, code, snapshot, availability, stats) and takes \
            commands on <prefix>/<camera>/set (snapshot, detect on|off, roi x,y,w,h). A camera \
            that fails goes offline and is opened again after 0.5 s, doubling to 30 s; the \
            others go on. While the broker is away, events wait in a bounded queue (and the \
            spool folder, when configured) and are delivered in order. With a preview: \
            section, every camera is also served to the browser as by `cvcam preview` \
            (the address is printed as "preview: URL").

            The whole file is checked before anything starts: every problem is printed with \
            its line, camera and key (exit 64). SIGHUP reads the file again: changed cameras \
            restart, removed ones stop, new ones start, the others keep running (a file with \
            problems is refused and the running configuration stays). SIGTERM or SIGINT stops \
            the cameras (snapshots being chosen are written, recordings finished), publishes \
            offline and exits 0. See the README, "Many cameras", for the file and the topics.

            Exit codes: 0 stopped by a signal; 1 the broker settings could not be used; 64 usage \
            error or a problem in FILE.
            """)

    @Option(help: "The configuration file (YAML).", completion: .file(extensions: ["yaml", "yml"]))
    var config: String

    @Flag(help: "Check the file and exit: 0 when it is good, 64 with its problems otherwise.")
    var check = false

    @Flag(name: .shortAndLong, help: "Also log cvcam's debug lines, and FFmpeg's and OpenCV's own warnings and errors, to stderr.")
    var verbose = false

    func run() throws {
        let loaded: ServeConfig
        do { loaded = try ServeConfig.load(path: config) } catch {
            TerminalText.printError(error.description)
            throw ExitCode(ExitStatus.usage)
        }
        if check {
            print("\(TerminalText.escaped(config)): \(loaded.cameras.count) camera(s), no problems")
            return
        }
        MallocArenas.limit()
        let logger = Logger(label: "cvcam.serve")
        let metrics = loaded.metricsListen == nil ? nil : ServeMetrics()
        let link: MQTTLink
        do { link = try MQTTLink(loaded.mqtt, metrics: metrics, logger: logger) } catch {
            TerminalText.printError("cvcam serve: \(error)")
            throw ExitCode(ExitStatus.runtimeError)
        }
        var previewServer: PreviewServer.Running?
        var directory: PreviewDirectory?
        var library: PreviewLibrary?
        if let settings = loaded.preview {
            let cameras = PreviewDirectory()
            let files = PreviewLibrary()
            var previewLogger = Logger(label: "cvcam.serve.preview")
            previewLogger.logLevel = verbose ? .debug : .warning
            do {
                var server = PreviewServer(
                    cameras: cameras, token: settings.token, allowedHosts: settings.allowedHosts, logger: previewLogger)
                server.library = files
                previewServer = try server.start(on: settings.listen)
            } catch {
                TerminalText.printError("cvcam serve: \(error)")
                throw ExitCode(ExitStatus.runtimeError)
            }
            directory = cameras
            library = files
        }
        defer { previewServer?.stop() }
        // The daemon lists its cameras in the preview's directory as it is made.
        let daemon = ServeDaemon(config: loaded, configPath: config, link: link, metrics: metrics, preview: directory, library: library)
        if let settings = loaded.preview {
            let shown = ListenAddress(host: settings.listen.host, port: previewServer?.port ?? settings.listen.port)
            // On stdout, as `cvcam preview` says it (the log shows warnings and errors only).
            try? FileHandle.standardOutput.write(contentsOf: Data("preview: http://\(shown)/\n".utf8))
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: DaemonService(daemon: daemon))]
        if let listen = loaded.metricsListen, let metrics {
            services.append(
                .init(service: try MetricsServer(address: listen, metrics: metrics, allowedHosts: loaded.metricsAllowedHosts, logger: logger)))
        }
        // A parent may start the daemon with these signals blocked (the mask is inherited); blocked,
        // SIGTERM would never stop it nor SIGHUP reload it.
        var handled = sigset_t()
        sigemptyset(&handled)
        for sig in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&handled, sig) }
        pthread_sigmask(SIG_UNBLOCK, &handled, nil)
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        // ArgumentParser's synchronous run: the services run on the concurrency pool meanwhile.
        let finished = DispatchSemaphore(value: 0)
        let failure = Mutex<(any Error)?>(nil)
        Task {
            do { try await group.run() } catch { failure.withLock { $0 = error } }
            finished.signal()
        }
        finished.wait()
        if let error = failure.withLock({ $0 }) {
            TerminalText.printError("cvcam serve: \(error)")
            throw ExitCode(ExitStatus.runtimeError)
        }
    }
}

/// The cameras as a service of the group: started at once, reloaded on SIGHUP, stopped
/// (files finished, offline published) on the group's graceful shutdown.
struct DaemonService: Service {
    let daemon: ServeDaemon

    func run() async throws {
        // Trapped before the cameras start, so an early SIGHUP reloads rather than kills.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        daemon.start()
        let reloads = Task {
            for await _ in hangups { daemon.reload() }
        }
        try? await gracefulShutdown()
        reloads.cancel()
        daemon.shutdown()
    }
}
