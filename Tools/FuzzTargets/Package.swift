// swift-tools-version: 6.0
//
// libFuzzer targets for cvcam, built only by `Tools/fuzz` (with `-sanitize=fuzzer,address`):
// a package of its own so that `swift build` and `swift test` at the root never see them.
// Each target's main.swift hands one test function to libFuzzer's driver (`runFuzzer`).
import PackageDescription

let package = Package(
    name: "cvcam-fuzz",
    dependencies: [
        .package(name: "cvcam", path: "../.."),
        // The tool's command tree (CVCamCommands), which links the daemon and the preview too.
        .package(name: "cvcam-app", path: "../../App"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // Helpers the fuzz targets share (temporary files, fixture paths).
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer"]),
        .target(name: "CLibFuzzer"),
        .executableTarget(name: "fuzz-image", dependencies: ["FuzzSupport", .product(name: "CaptureKit", package: "cvcam")], path: "Sources/FuzzImage"),
        .executableTarget(
            name: "fuzz-spec", dependencies: ["FuzzSupport", .product(name: "CVCamCommands", package: "cvcam-app")],
            path: "Sources/FuzzSpec"),
        .executableTarget(
            name: "fuzz-cli",
            dependencies: [
                "FuzzSupport", .product(name: "CVCamCommands", package: "cvcam-app"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/FuzzCLI"),
        .executableTarget(name: "fuzz-video", dependencies: ["FuzzSupport", .product(name: "CaptureKit", package: "cvcam")], path: "Sources/FuzzVideo"),
        .executableTarget(
            name: "fuzz-avi-roundtrip", dependencies: ["FuzzSupport", .product(name: "CaptureKit", package: "cvcam")],
            path: "Sources/FuzzAVIRoundTrip"),
    ],
    swiftLanguageModes: [.v6]
)
