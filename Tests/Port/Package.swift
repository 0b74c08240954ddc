// swift-tools-version: 6.0
//
// A package that depends on CaptureKit by path, as an app would (issue #32). Tools/test-port builds
// and runs PortCheck and counts what this package resolves; Tools/check-layers builds the two
// LayerCheck targets. One package, one build folder (Tests/Port/.build): CaptureKit is compiled
// once for both checks.
//
//   PortCheck                  the AVFoundation CameraController, ported with only the fair
//                              changes (Sources/PortCheck/CameraController.swift), and the checks
//   LayerCheckUsesTesting      a client of the CaptureKitTesting product: must build
//   LayerCheckUsesCaptureKit   a client of CaptureKit alone naming the test corpus and a `package`
//                              seam: must NOT build (check-layers looks for the two errors); so
//                              build targets of this package by name, never all of them
import PackageDescription

let package = Package(
    name: "AVFoundationPort",
    dependencies: [
        .package(name: "cvcam", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "PortCheck",
            dependencies: [.product(name: "CaptureKit", package: "cvcam")]
        ),
        .target(
            name: "LayerCheckUsesTesting",
            dependencies: [.product(name: "CaptureKitTesting", package: "cvcam")],
            path: "Sources/LayerCheck/UsesTesting"
        ),
        .target(
            name: "LayerCheckUsesCaptureKit",
            dependencies: [.product(name: "CaptureKit", package: "cvcam")],
            path: "Sources/LayerCheck/UsesCaptureKit"
        ),
    ],
    swiftLanguageModes: [.v6]
)
