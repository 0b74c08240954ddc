import ArgumentParser
import CaptureKit
import Foundation

/// The snapshot options of `cvcam watch`, which are also the keys of a `cvcam serve` camera's
/// `snapshots:` section (the daemon parses them with this same group, so the two never disagree).
package struct SnapshotOptions: ParsableArguments {
    @Option(help: "Folder for the snapshots (created if missing).", completion: .directory, transform: InputOptions.argumentBytes)
    package var dir: String

    @Option(help: "Smallest face, as a fraction of the frame height (0…1).")
    package var minFaceSize: Double = 0.05

    @Option(help: "Smallest detector score (0…1).")
    package var minScore: Double = 0.6

    @Option(help: "Largest head roll in degrees (0…180; 180: no limit).")
    package var maxRoll: Double = 30

    @Option(help: "Largest head yaw in degrees (0…180; 180: no limit).")
    package var maxYaw: Double = 45

    @Option(help: "Smallest sharpness of the face box (variance of the Laplacian, e.g. 50); default: no gate.")
    package var minSharpness: Double?

    @Option(help: "Qualifying frames to choose the best from (1: take the first).")
    package var bestOf: Int = 1

    @Option(help: "Seconds before a face still in view triggers again; default: once per face.")
    package var faceCooldown: Double?

    @Option(help: "Seconds after any snapshot during which no other is taken.")
    package var cooldown: Double = 0

    @Option(help: "Frames from before the chosen one to write too (0…30).")
    package var preFrames: Int = 0

    @Option(help: "At most this many snapshots per --window seconds; default: no limit.")
    package var maxPerWindow: Int?

    @Option(help: "The window, in seconds, for --max-per-window.")
    package var window: Double = 60

    @Option(help: "Interval mode: a snapshot every SECONDS while faces are in view, instead of one per new face.")
    package var every: Double?

    @Option(help: "JPEG quality, 1…100.")
    package var quality: Int = 92

    package func validate() throws {
        // The folder is created through Foundation paths, which would store such a name's bytes altered.
        guard !dir.unicodeScalars.contains(where: { FilePathBytes.carriedByte($0) != nil }) else {
            throw ValidationError(
                "--dir '\(TerminalText.escaped(dir))' is not a UTF-8 folder name; use a UTF-8 name for the snapshot folder.")
        }
        try OptionRange.check(minFaceSize, 0...1, "--min-face-size")
        try OptionRange.check(minScore, 0...1, "--min-score")
        try OptionRange.check(maxRoll, 0...180, "--max-roll", unit: " degrees")
        try OptionRange.check(maxYaw, 0...180, "--max-yaw", unit: " degrees")
        try OptionRange.check(minSharpness, 0...1_000_000, "--min-sharpness")
        try OptionRange.check(bestOf, 1...300, "--best-of", unit: " frames")
        try OptionRange.check(faceCooldown, OptionRange.seconds, "--face-cooldown", unit: " seconds")
        try OptionRange.check(cooldown, OptionRange.seconds, "--cooldown", unit: " seconds")
        try OptionRange.check(preFrames, 0...30, "--pre-frames")
        try OptionRange.check(maxPerWindow, 1...1_000_000, "--max-per-window")
        try OptionRange.check(window, OptionRange.positiveSeconds, "--window", unit: " seconds")
        try OptionRange.check(every, OptionRange.positiveSeconds, "--every", unit: " seconds")
        try OptionRange.check(quality, 1...100, "--quality")
    }

    /// The trigger configuration the flags describe.
    package var triggerConfiguration: SnapshotTrigger.Configuration {
        SnapshotTrigger.Configuration(
            mode: every.map { .interval(seconds: $0) } ?? .newFace, minimumFaceSize: minFaceSize, minimumConfidence: minScore,
            maximumRollAngle: maxRoll >= 180 ? nil : maxRoll, maximumYawAngle: maxYaw >= 180 ? nil : maxYaw,
            minimumSharpness: minSharpness, bestFrameWindow: bestOf, faceCooldown: faceCooldown, globalCooldown: cooldown,
            preTriggerFrameCount: preFrames, maximumSnapshotsPerWindow: maxPerWindow, snapshotWindow: window)
    }

    package init() {}
}
