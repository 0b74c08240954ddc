import ArgumentParser
import CaptureJobs
import CaptureKit
import Foundation

/// `cvcam faces`: the live face log.
struct Faces: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Log faces: a line when a face enters, while it stays (rate-limited), and when it leaves.",
        discussion: """
            Each face gets a faceID when it enters; the ID stays while the same face stays and is \
            never reused. Boxes are in device space (0…1 of the frame, top-left origin); add \
            --view WxH to also print them in the coordinates of a screen. A summary follows the \
            events (frames, fps, skipped frames, faces seen).

            Several inputs (arguments, repeated --input, or - for standard input: an image, or \
            a list of paths one per line) are read one after another; each event names its \
            `source` file (the image within a folder, too), and one summary ends the run. Text \
            output: face lines on stdout; errors, drop reports and the summary on stderr.

            Exit codes: 0 ok; 1 runtime error (with several inputs: any input failed; the \
            others are still read); 64 usage error.
            """)

    @Argument(
        help: ArgumentHelp("Files or folders to read (like --input; several are read in turn; - is standard input).", valueName: "input"),
        completion: .file(), transform: InputOptions.argumentBytes)
    var files: [String] = []

    @OptionGroup var input: InputOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var faceOptions: FaceOptions
    @OptionGroup(title: "Motion") var motion: MotionOptions

    @Option(help: "Seconds between update lines for a face that stays (0: every frame).")
    var updateInterval: Double = 1

    @Flag(help: "A line for every face in every frame (event \"frame\") instead of update lines.")
    var everyFrame = false

    func validate() throws {
        try OptionRange.check(updateInterval, OptionRange.seconds, "--update-interval", unit: " seconds")
    }

    func run() throws {
        let list = try InputList(arguments: files, options: input)
        defer { list.removeTemporaryFiles() }
        // Each input has its own tracker, numbering from 1; the log renumbers so that a faceID
        // names one face in the whole run, as the README promises.
        var idOffset = 0
        var previousLog: FaceLog?
        _ = try CaptureJob.analyseEach(list, options: input, output: output, noun: "faces", phrase: "faces seen", summaryField: \.faces) {
            job, sources in
            idOffset += previousLog?.highestFaceID ?? 0
            var one = input
            one.input = job.options.input
            let metadata = try faceOptions.faceOutput(for: one, latency: job)
            metadata.faceUpdateInterval = everyFrame ? .infinity : updateInterval
            let log = FaceLog(printer: job.printer, everyFrame: everyFrame, sources: sources, idOffset: idOffset)
            previousLog = log
            metadata.motionDetection = motion.settings()
            metadata.setMetadataObjectsDelegate(
                MetadataDelegates.with(log, motion: motion, printer: job.printer), queue: DispatchQueue(label: "cvcam.faces.log"))
            try job.add(metadata)
            return (metadata, { log.facesSeen })
        }
    }
}
