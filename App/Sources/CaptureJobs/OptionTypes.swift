import ArgumentParser
import CaptureKit
import Foundation

// Options with a fixed set of values are typed: ArgumentParser lists the values in --help and
// refuses anything else with its own message (exit 64), so no command checks them by hand.

/// `--gravity`: how the video fills --view, in the user's words for
/// `CaptureVideoPreviewLayer.VideoGravity`.
package enum Gravity: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// Letterbox: the whole frame, aspect kept (`.resizeAspect`).
    case fit
    /// Crop: the whole view covered, aspect kept (`.resizeAspectFill`).
    case fill
    /// The frame stretched to the view (`.resize`).
    case stretch

    package var videoGravity: CaptureVideoPreviewLayer.VideoGravity {
        switch self {
        case .fit: .resizeAspect
        case .fill: .resizeAspectFill
        case .stretch: .resize
        }
    }
}

/// `--rotate`: a clockwise rotation the connection supports.
package enum Rotation: Int, CaseIterable, ExpressibleByArgument, Sendable {
    case upright = 0
    case quarterTurn = 90
    case halfTurn = 180
    case threeQuarterTurn = 270

    package var degrees: Int { rawValue }
}

/// `--preset`: one of the library's presets (the conformance is the CLI's: CaptureKit does not
/// import ArgumentParser).
extension SessionPreset: ExpressibleByArgument {
    /// Only a preset the library defines; `SessionPreset(rawValue:)` would accept any name.
    public init?(argument: String) {
        guard let preset = Self.allCases.first(where: { $0.rawValue == argument }) else { return nil }
        self = preset
    }
}

/// `--view WxH`: the size of the screen boxes are mapped to, in points, each side 1…16384.
package struct ViewSize: ExpressibleByArgument, Equatable, Sendable {
    package var width: Int
    package var height: Int

    package init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    package init?(argument: String) {
        guard let size = InputOptions.parseSize(argument) else { return nil }
        self.init(width: size.width, height: size.height)
    }

    package var defaultValueDescription: String { "\(width)x\(height)" }

    /// The view's bounds, at origin zero.
    package var bounds: CGRect { CGRect(x: 0, y: 0, width: width, height: height) }
}

/// `--types`: code types by name, comma-separated, or `all` for every type this build reads.
/// Names are checked here against every type CaptureKit knows; whether this build can read
/// them (ZBar's barcodes) is known only from the output, so `scan` checks that when it runs.
package enum CodeTypeSelection: ExpressibleByArgument, Equatable, Sendable {
    case all
    case only([MetadataObjectType])

    package init?(argument: String) {
        if argument.trimmingCharacters(in: .whitespaces).lowercased() == "all" {
            self = .all
            return
        }
        // "qr, ean13" as typed in a shell with quotes: spaces around names are not part of them.
        let names = argument.split(separator: ",", omittingEmptySubsequences: false)
        let types = names.map { MetadataObjectType(rawValue: $0.trimmingCharacters(in: .whitespaces).lowercased()) }
        guard types.allSatisfy({ MetadataObjectType.machineReadableCodeTypes.contains($0) }) else { return nil }
        self = .only(types)
    }

    package static var allValueStrings: [String] { MetadataObjectType.machineReadableCodeTypes.map(\.rawValue) + ["all"] }

    /// The code types this selection means among `available` (a metadata output's types; faces
    /// are left out). Throws `ValidationError` naming the types this build lacks.
    package func resolved(available: [MetadataObjectType]) throws -> [MetadataObjectType] {
        let codes = available.filter { $0 != .face }
        switch self {
        case .all: return codes
        case .only(let named):
            let unknown = named.filter { !codes.contains($0) }
            guard unknown.isEmpty else {
                throw ValidationError(
                    "Code type(s) \(unknown.map(\.rawValue).joined(separator: ", ")) not available in this build. Available: \(codes.map(\.rawValue).joined(separator: ", ")), all.")
            }
            return named
        }
    }

    /// Shell completion offers the names too (a type that is not CaseIterable gets none by default).
    package static var defaultCompletionKind: CompletionKind { .list(allValueStrings) }

    package var defaultValueDescription: String {
        switch self {
        case .all: "all"
        case .only(let types): types.map(\.rawValue).joined(separator: ",")
        }
    }
}
