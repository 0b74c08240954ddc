import ArgumentParser
import CaptureKit
import Foundation

/// `cvcam devices`: the cameras this machine has.
struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List cameras with their formats.",
        discussion: """
            Besides cameras, every capturing command takes --input with a video file (MP4, MKV, \
            AVI), an image, a folder of images, or synthetic:SPEC (a generated scene; see \
            `cvcam help faces`). Those are not listed here.

            Exit codes: 0 ok (also when no camera exists), 1 runtime error.
            """)

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func run() throws {
        let cameras = CaptureDevice.DiscoverySession(deviceTypes: [.external], mediaType: .video, position: .unspecified)
            .devices
        if json {
            let list: [[String: Any]] = cameras.enumerated().map { index, device in
                [
                    "index": index, "name": device.localizedName, "uniqueID": device.uniqueID,
                    "position": device.position.rawValue,
                    "formats": device.formats.map { f in
                        [
                            "pixelFormat": f.mediaSubType, "width": f.dimensions.width, "height": f.dimensions.height,
                            "frameRates": f.videoSupportedFrameRateRanges.map { EventPrinter.round($0.maxFrameRate, 3) },
                        ] as [String: Any]
                    },
                ]
            }
            print(EventPrinter.encode(["schema": EventPrinter.schemaVersion, "type": "devices", "devices": list]))
            return
        }
        if cameras.isEmpty {
            print("No cameras found. Try the bundled demo (Tools/demo) or --input FILE|FOLDER|synthetic:SPEC.")
            return
        }
        for (index, device) in cameras.enumerated() {
            print("[\(index)] \(device.localizedName)")
            print("    unique ID: \(device.uniqueID)")
            for format in device.formats { print("    \(format)") }
        }
    }
}
