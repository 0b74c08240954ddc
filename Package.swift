// swift-tools-version: 6.0
//
// cvcam: AVFoundation's capture architecture for Linux webcams.
//
// Layers (each depends only on the ones below it; Tools/check-layers builds a client of the
// CaptureKit product and checks that the testing layer is out of its sight):
//   App/ (a second package: the cvcam tool, its daemon and browser preview, the MQTT client;
//         it depends on this one by path, so an app depending on CaptureKit never resolves
//         Hummingbird, SwiftNIO, Prometheus, Yams or swift-argument-parser)
//   Tools/*            benchmarks and fixture makers, on CaptureKit (and CaptureKitTesting's corpus)
//   CaptureKitTesting  test doubles and the generated QR corpus, a product for testing apps
//                      (as swift-log's InMemoryLogging); test targets and Tools use it, the library
//                      never does, so none of it ships in CaptureKit's API
//   CaptureKit         the Swift API, shaped like AVFoundation: session, devices, outputs, metadata
//                      objects and trackers, preview geometry; re-exports CaptureVision's public API
//   CaptureVision      detectors (FaceDetector, CodeDetector and their ZBar, zxing-cpp and YuNet
//                      runners), imaging, pixel buffers and CaptureError: the only Swift that calls
//                      CVBridge, each wrapper naming its C call (`package` seams for CaptureKit and
//                      CaptureKitTesting: Imaging, CodeImaging, DeviceSpace, PixelBuffer.withBridgeImage)
//   CVBridge           C ABI over OpenCV, ZBar and zxing-cpp (C++ inside, plain C header, no policy);
//                      its calls into OpenCV's video, dnn/objdetect and codec modules are the targets
//                      CVBridgeVideo, CVBridgeObjdetect and CVBridgeImgcodecs (see `leanModules`)
//   CV4L2        what Swift cannot import from <linux/videodev2.h> (macros, variadic calls)
//   COpenCV, CFFmpeg, CZBar, CZXing, CLibV4L2: system libraries found through pkg-config
//
// This package depends on swift-log only: it is what an app resolves when it adds CaptureKit.
import PackageDescription

// Where CVBridge's calls into OpenCV's heavy modules (videoio and FFmpeg; objdetect and dnn;
// imgcodecs and GDAL) live (issue #33):
// - By default (any plain `swift build`: development, the suites, and every package that depends
//   on CaptureKit) the three module targets are linked into CVBridge like the rest of the shim,
//   OpenCV comes from pkg-config, and everything works with no set-up (issue #32).
// - With CVCAM_LEAN_MODULES=1, which only Tools/install sets (and so Tools/package), CVBridge
//   links OpenCV's core and imgproc alone and loads (dlopen) each module on first use from
//   PREFIX/lib/cvcam, where Tools/install puts the shared objects it links from those targets'
//   objects. `cvcam --version` and `cvcam scan IMAGE` then map none of the heavy libraries.
//   OpenCV is no pkg-config system library in this layout: opencv4.pc names all 50 modules and
//   SwiftPM puts --as-needed after them, where it drops nothing; each target names what it links.
let leanModules = Context.environment["CVCAM_LEAN_MODULES"] == "1"

let moduleTargets = ["CVBridgeVideo", "CVBridgeObjdetect", "CVBridgeImgcodecs"]
// OpenCV: pkg-config's view by default; in the lean layout its headers (what `pkg-config
// --cflags opencv4` gives on Debian) and libraries by name. Unsafe flags only there: a package
// that depends on this one never sets the variable.
let openCV: [Target.Dependency] = leanModules ? [] : ["COpenCV"]
let openCVHeaders: [CXXSetting] = leanModules ? [.unsafeFlags(["-I/usr/include/opencv4"])] : []
let openCVLibraries: (_ names: [String]) -> [LinkerSetting] = { names in
    leanModules ? names.map { .linkedLibrary("opencv_\($0)") } : []
}
// The modules see CVBridge's internal headers; as shared objects they export their entry point only.
let moduleSettings: [CXXSetting] =
    openCVHeaders + [.headerSearchPath("../CVBridge")] + (leanModules ? [.unsafeFlags(["-fvisibility=hidden"])] : [])

let package = Package(
    name: "cvcam",
    products: [
        .library(name: "CaptureKit", targets: ["CaptureKit"]),
        // Test doubles (recording delegates, scripted frame sources) and the generated QR corpus.
        .library(name: "CaptureKitTesting", targets: ["CaptureKitTesting"]),
        // TEST SUPPORT ONLY, not for apps (which depend on CaptureKit; it never links this): an
        // emulated V4L2 camera that tests load with LD_PRELOAD (Tools/test). Its hooks replace libc's
        // open, ioctl, stat and more, so it stays inert unless LD_PRELOAD names it. A product only so
        // that `swift build` makes libV4L2Emulator.so, the name Tools/test and the CLI tests preload.
        .library(name: "V4L2Emulator", type: .dynamic, targets: ["V4L2Emulator"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // System libraries. Install them with `Tools/setup` (Debian packages named below).
        // All of OpenCV; no target depends on it in the lean layout (`leanModules`).
        .systemLibrary(
            name: "COpenCV",
            pkgConfig: "opencv4",
            providers: [.apt(["libopencv-dev"])]
        ),
        .systemLibrary(
            name: "CZBar",
            pkgConfig: "zbar",
            providers: [.apt(["libzbar-dev"])]
        ),
        .systemLibrary(
            name: "CZXing",
            pkgConfig: "zxing",
            providers: [.apt(["libzxing-dev"])]
        ),
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev"])]
        ),
        .systemLibrary(
            name: "CLibV4L2",
            pkgConfig: "libv4l2",
            providers: [.apt(["libv4l-dev"])]
        ),

        // C ABI over OpenCV, ZBar and zxing-cpp: marshalling only, every policy lives in Swift.
        // JPEG and PNG stills are decoded with libjpeg-turbo and libpng directly (stills.cpp).
        // CVB_LEAN_MODULES makes modules.cpp find the modules with dlopen instead of the linker.
        .target(
            name: "CVBridge",
            dependencies: openCV + ["CZBar", "CZXing"] + (leanModules ? [] : moduleTargets.map { .target(name: $0) }),
            cxxSettings: openCVHeaders + (leanModules ? [.define("CVB_LEAN_MODULES")] : []),
            linkerSettings: openCVLibraries(["imgproc", "core"]) + [
                .linkedLibrary("jpeg"), .linkedLibrary("png16"), .linkedLibrary("dl"),
            ]
        ),
        // CVBridge's modules (CVBridge/module_api.hpp). By default plain targets CVBridge depends
        // on; in the lean layout no product links them and Tools/install makes shared objects of
        // their objects.
        .target(
            name: "CVBridgeVideo",
            dependencies: openCV + ["CFFmpeg"],
            cxxSettings: moduleSettings,
            // libavutil (av_log_set_callback): pkg-config's libavformat does not link it.
            linkerSettings: openCVLibraries(["videoio", "core"]) + [.linkedLibrary("avutil")]
        ),
        .target(
            name: "CVBridgeObjdetect",
            dependencies: openCV,
            cxxSettings: moduleSettings,
            linkerSettings: openCVLibraries(["objdetect", "dnn", "imgproc", "core"])
        ),
        .target(
            name: "CVBridgeImgcodecs",
            dependencies: openCV,
            cxxSettings: moduleSettings,
            linkerSettings: openCVLibraries(["imgcodecs", "core"])
        ),

        // What Swift cannot import from <linux/videodev2.h> and libv4l2: VIDIOC_* constants and
        // fixed-arity wrappers for variadic calls. No logic.
        .target(
            name: "CV4L2",
            dependencies: ["CLibV4L2"]
        ),
        // An emulated V4L2 camera (LD_PRELOAD interposer) so the real V4L2 path runs without hardware.
        // Test support: no other target may depend on it.
        .target(
            name: "V4L2Emulator",
            linkerSettings: [.linkedLibrary("jpeg"), .linkedLibrary("dl")]
        ),

        // Detectors, imaging and pixel buffers: the one Swift layer over CVBridge. CaptureKit does
        // not depend on CVBridge, so a shim call anywhere else fails to compile.
        // The face models (YuNet-n 2023, YuNet 2022mar, the Haar cascade, their licences) are its
        // resources, so every package that depends on CaptureKit gets them in its build folder
        // (`<package>_CaptureVision.resources/Models`, found by FaceModelSearch, not Bundle.module).
        // The checkout's Models/ is a link to Sources/CaptureVision/Models.
        .target(
            name: "CaptureVision",
            dependencies: [
                "CVBridge",
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Models")]
        ),
        .target(
            name: "CaptureKit",
            dependencies: [
                "CaptureVision",
                "CV4L2",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // CaptureVision's `package` imaging for the corpus's own drawing (warps, noise, blur).
        .target(
            name: "CaptureKitTesting",
            dependencies: ["CaptureKit", "CaptureVision"]
        ),

        // Reading speed of a video file through a session (frames per second).
        .executableTarget(
            name: "bench-frames",
            dependencies: ["CaptureKit"],
            path: "Tools/Bench/Frames"
        ),

        // Face detection benchmark: cvcam beside plain YuNet and Haar (Tools/bench-faces).
        .executableTarget(name: "bench-faces", dependencies: ["CaptureKit"], path: "Tools/Bench/Faces"),

        // Helper process for the photo/movie tests (the SIGKILL recorder) and their measurements.
        .executableTarget(
            name: "CaptureProbe",
            dependencies: ["CaptureKit"],
            path: "Tools/CaptureProbe"
        ),

        // Code-reading benchmark: plain ZBar versus CodeDetector on the generated corpus (Tools/bench-codes).
        .executableTarget(
            // CVBridge: the plain-ZBar baseline calls the shim's scanner directly, as a user of ZBar would.
            name: "bench-codes", dependencies: ["CaptureKit", "CaptureVision", "CaptureKitTesting", "CVBridge"],
            path: "Tools/Bench/Codes"),


        .testTarget(
            name: "CaptureKitTests",
            dependencies: ["CaptureKit", "CaptureVision", "CaptureKitTesting", "CVBridge"]
        ),
        .testTarget(
            name: "CaptureKitTestingTests",
            dependencies: ["CaptureKit", "CaptureKitTesting"]
        ),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
