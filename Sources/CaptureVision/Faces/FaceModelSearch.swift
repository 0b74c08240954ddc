import Foundation

/// Where the face models are looked for, in a fixed, documented order (README "Install"):
///
/// 1. the folder given explicitly (`--models DIR`, `FaceDetector(modelsDirectory:)`), else
/// 2. `CVCAM_MODELS`: either one, when set, is the only place searched, so a wrong path is an
///    error rather than a silent fallback;
/// 3. `../share/cvcam/models` relative to the running executable (an installed tree);
/// 4. the library's own resources beside the executable: SwiftPM copies CaptureVision's `Models`
///    into `<package>_CaptureVision.resources/` in the build folder of every package that depends
///    on CaptureKit, so an app built with `swift build` finds YuNet with no set-up;
/// 5. `Models/` of the checkout, for a binary inside a build folder (`<checkout>/.build*/…`);
/// 6. `/usr/share/cvcam/models`, then `/usr/local/share/cvcam/models`;
/// 7. OpenCV's Haar cascades from Debian's opencv-data (`/usr/share/opencv4/haarcascades`).
///
/// Each model file is taken from the first place that holds it. Nothing of the build machine is
/// compiled in: the executable's own path is read from `/proc/self/exe` at run time. That is why
/// the resources are not found through SwiftPM's `Bundle.module`: its accessor also falls back to
/// the build folder's absolute path, and stops the process (`fatalError`) when neither is there —
/// a binary copied elsewhere (`Tools/install`, a container image) would crash instead of going
/// on to the installed models. A binary moved out of its build folder takes its
/// `*_CaptureVision.resources` folder along, or uses an installed tree or `CVCAM_MODELS`.
/// A value type, safe to use from any thread; `locate` touches the file system.
public struct FaceModelSearch: Sendable, Equatable {
    /// Why a folder is on the list.
    public enum Place: String, Sendable, Equatable {
        case explicit = "--models"
        case environment = "CVCAM_MODELS"
        case installedBesideExecutable = "beside the executable"
        case resourceBundle = "the library's resources"
        case checkout = "the checkout"
        case system = "system"
        case local = "local"
        case openCVData = "opencv-data"
    }

    /// One folder to look in.
    public struct Candidate: Sendable, Equatable {
        public let place: Place
        public let folder: URL
    }

    /// The folders in search order.
    public let candidates: [Candidate]

    /// The environment variable that names the models folder.
    public static let environmentVariable = "CVCAM_MODELS"

    /// The search for a process: `explicit` first, then the environment and the executable's
    /// location. `executable` defaults to this process's (`/proc/self/exe`); the library's
    /// resources are looked for in its folder (`resourceBundle(besideExecutable:)`) and listed
    /// only when they are there.
    public init(
        explicit: URL? = nil, environment: [String: String] = ProcessInfo.processInfo.environment,
        executable: URL? = Self.currentExecutable
    ) {
        if let explicit {
            candidates = [Candidate(place: .explicit, folder: explicit)]
            return
        }
        if let named = environment[Self.environmentVariable], !named.isEmpty {
            candidates = [Candidate(place: .environment, folder: URL(fileURLWithPath: named))]
            return
        }
        var list: [Candidate] = []
        if let executable {
            let bin = executable.deletingLastPathComponent()
            list.append(
                Candidate(
                    place: .installedBesideExecutable,
                    folder: bin.deletingLastPathComponent().appendingPathComponent("share/cvcam/models").standardized))
            if let resources = Self.resourceBundle(besideExecutable: executable) {
                list.append(Candidate(place: .resourceBundle, folder: resources))
            }
            if let checkout = Self.checkout(containing: executable) {
                list.append(Candidate(place: .checkout, folder: checkout.appendingPathComponent("Models")))
            }
        }
        list.append(Candidate(place: .system, folder: URL(fileURLWithPath: "/usr/share/cvcam/models")))
        list.append(Candidate(place: .local, folder: URL(fileURLWithPath: "/usr/local/share/cvcam/models")))
        list.append(Candidate(place: .openCVData, folder: URL(fileURLWithPath: "/usr/share/opencv4/haarcascades")))
        candidates = list
    }

    /// The first candidate folder holding `fileName`, and the file there.
    public func locate(_ fileName: String) -> (file: URL, place: Place)? {
        for candidate in candidates {
            let file = candidate.folder.appendingPathComponent(fileName)
            if FileManager.default.fileExists(atPath: file.path) { return (file, candidate.place) }
        }
        return nil
    }

    /// The suffix SwiftPM gives the folder of CaptureVision's resources; the part before it is the
    /// name of the package that holds CaptureVision, which depends on how an app refers to it.
    public static let resourceBundleSuffix = "_CaptureVision.resources"

    /// The `Models` folder of the library's resources in the folder of `executable`
    /// (`<package>_CaptureVision.resources/Models`, as `swift build` lays out a build folder), or
    /// nil when there is none. SwiftPM allows one target named CaptureVision in a build, so at
    /// most one such folder is there.
    public static func resourceBundle(besideExecutable executable: URL) -> URL? {
        let folder = executable.deletingLastPathComponent()
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return nil }
        for name in names.sorted() where name.hasSuffix(resourceBundleSuffix) {
            let models = folder.appendingPathComponent(name).appendingPathComponent("Models")
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: models.path, isDirectory: &isFolder), isFolder.boolValue {
                return models
            }
        }
        return nil
    }

    /// This process's executable, resolved by the kernel (`/proc/self/exe`), so a binary started
    /// through `PATH` or a symlink is found where it really is.
    public static var currentExecutable: URL? {
        guard let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        return URL(fileURLWithPath: path)
    }

    /// The checkout above a binary in one of its build folders (`.build`, `.build-asan`, …): the
    /// folder holding that build folder when it has a Package.swift and Models/, or its parent
    /// when the build folder is the App package's (`<checkout>/App/.build…`).
    static func checkout(containing executable: URL) -> URL? {
        let parts = executable.standardized.pathComponents
        guard let index = parts.lastIndex(where: { $0.hasPrefix(".build") }), index > 0 else { return nil }
        var root = URL(fileURLWithPath: NSString.path(withComponents: Array(parts[..<index])))
        let fm = FileManager.default
        guard fm.fileExists(atPath: root.appendingPathComponent("Package.swift").path) else { return nil }
        if !fm.fileExists(atPath: root.appendingPathComponent("Models").path),
            fm.fileExists(atPath: root.deletingLastPathComponent().appendingPathComponent("Package.swift").path)
        {
            root.deleteLastPathComponent()
        }
        return root
    }
}
