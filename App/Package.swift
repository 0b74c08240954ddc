// swift-tools-version: 6.0
//
// The cvcam tool, its daemon and its browser preview: a package of their own, beside the library
// package at the repository's root, so that an app depending on CaptureKit resolves swift-log and
// nothing else (no SwiftNIO, Hummingbird, Prometheus, Yams or swift-argument-parser).
//
// Layers (each depends only on the ones below it; Tools/check-layers enforces who imports what):
//   cvcam            the executable: `CVCam.main()`
//   CVCamCommands    the command tree: argument parsing (swift-argument-parser) and wiring only
//   CaptureServe     `cvcam serve` as a library: cameras from YAML, MQTT topics, Home Assistant
//                    discovery, Prometheus metrics, reload, segment recording
//   CapturePreview   the browser preview as a library: HTTP + WebSocket (Hummingbird) over
//                    CaptureVideoPreviewLayer, MJPEG fan-out, access control
//   CaptureJobs      what the commands, the daemon and the preview share: input and face options
//                    (the daemon's YAML keys are the same options), running a session as a job,
//                    the NDJSON event schema and its printer, stats, terminal escaping
//   CaptureMQTT      the MQTT client (libmosquitto) with its ordered, bounded, spooling outbox;
//                    on CMosquitto and swift-log only, and the only Swift that calls libmosquitto
//   CaptureKit       from the root package (`..`)
import PackageDescription

let package = Package(
    name: "cvcam-app",
    products: [
        .executable(name: "cvcam", targets: ["cvcam"]),
        .library(name: "CaptureServe", targets: ["CaptureServe"]),
        .library(name: "CapturePreview", targets: ["CapturePreview"]),
        .library(name: "CaptureMQTT", targets: ["CaptureMQTT"]),
        // The command tree, for the fuzz targets (Tools/FuzzTargets); apps use the libraries above.
        .library(name: "CVCamCommands", targets: ["CVCamCommands"]),
    ],
    dependencies: [
        // The library package; its identity is "cvcam" whatever the checkout's folder is called.
        .package(name: "cvcam", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // `cvcam serve`: its YAML configuration.
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.0"),
        // /metrics in Prometheus text format.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // The HTTP server of /metrics and of the browser preview, with WebSockets.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.0.0"),
        // Graceful shutdown on SIGTERM, reload on SIGHUP.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        // MQTT over libmosquitto with its own ordered, bounded, spooling outbox.
        .target(
            name: "CaptureMQTT",
            dependencies: [
                "CMosquitto",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CaptureJobs",
            dependencies: [
                .product(name: "CaptureKit", package: "cvcam"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CapturePreview",
            dependencies: [
                "CaptureJobs",
                .product(name: "CaptureKit", package: "cvcam"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "CaptureServe",
            dependencies: [
                "CaptureJobs",
                "CaptureMQTT",
                "CapturePreview",
                .product(name: "CaptureKit", package: "cvcam"),
                // A camera's YAML keys are parsed by the tool's own option groups (CaptureJobs).
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
        // The command tree: argument parsing and wiring of the libraries below, a library so that
        // the fuzzer (Tools/FuzzTargets) and the tests parse exactly what the tool parses.
        .target(
            name: "CVCamCommands",
            dependencies: [
                "CaptureJobs",
                "CaptureServe",
                "CapturePreview",
                .product(name: "CaptureKit", package: "cvcam"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // The executable: `CVCam.main()`.
        .executableTarget(name: "cvcam", dependencies: ["CVCamCommands"]),

        // Writes the bundled demo clip from the fixture photos (Tools/demo runs it).
        .executableTarget(
            name: "cvcam-make-demo",
            dependencies: [.product(name: "CaptureKit", package: "cvcam")],
            path: "Tools/MakeDemo"
        ),

        // glibc's mallinfo2 for the soak's memory trend (not in Swift's Glibc module).
        .target(name: "BenchHeap", path: "Tools/Bench/Heap"),
        // Measures the pipeline for Tools/bench: throughput, live latency, scaling, soak.
        .executableTarget(
            name: "bench-pipeline",
            dependencies: [
                "BenchHeap",
                .product(name: "CaptureKit", package: "cvcam"),
                .product(name: "CaptureKitTesting", package: "cvcam"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/Bench/Pipeline"
        ),

        // What the App's tests share: the built binary and its runs, a loopback client, a
        // Mosquitto broker and the network-camera servers on loopback. Tests only.
        .target(name: "AppTestSupport", dependencies: ["CaptureServe"], path: "Tests/AppTestSupport"),
        // Against a real Mosquitto broker on loopback (skipped when /usr/sbin/mosquitto is absent).
        .testTarget(
            name: "CaptureMQTTTests",
            dependencies: [
                "CaptureMQTT",
                "AppTestSupport",
                .product(name: "CaptureKitTesting", package: "cvcam"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The daemon: its configuration, cameras, topics, discovery and metrics in-process, and
        // `cvcam serve` end to end against Mosquitto.
        .testTarget(
            name: "CaptureServeTests",
            dependencies: [
                "CaptureServe",
                "CapturePreview",
                "CaptureJobs",
                "AppTestSupport",
                "cvcam",
                .product(name: "CaptureKit", package: "cvcam"),
                .product(name: "CaptureKitTesting", package: "cvcam"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The browser preview: server, fan-out and access in-process, and `cvcam preview` end to
        // end (loopback clients, the emulated camera, headless Chromium).
        .testTarget(
            name: "CapturePreviewTests",
            dependencies: [
                "CapturePreview",
                "CaptureJobs",
                "AppTestSupport",
                "cvcam",
                .product(name: "CaptureKit", package: "cvcam"),
                .product(name: "CaptureKitTesting", package: "cvcam"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The tool: parsing, messages, golden NDJSON and every command end to end.
        .testTarget(
            name: "cvcamTests",
            dependencies: [
                "cvcam",
                "CVCamCommands",
                "CaptureJobs",
                "AppTestSupport",
                .product(name: "CaptureKit", package: "cvcam"),
                .product(name: "CaptureKitTesting", package: "cvcam"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            exclude: ["Golden"]  // NDJSON golden files, read from the source tree
        ),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
