import ArgumentParser
import BenchHeap
import CaptureKit
import Dispatch
import Foundation
import Synchronization

/// Monotonic seconds (the clock the session's frame pacing uses: `DispatchTime`).
func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

/// CPU seconds of this process, user + system (`getrusage(RUSAGE_SELF)`).
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
        + Double(usage.ru_stime.tv_usec) / 1e6
}

/// Resident memory, threads and open descriptors of this process, from /proc/self, and what
/// malloc holds (`mallinfo2`, summed over all arenas): bytes handed out and not yet freed
/// against bytes taken from the system. In use growing means objects kept alive; held growing
/// while in use stays flat means freed memory malloc keeps (fragmentation, per-thread arenas).
struct ProcessSample: Sendable {
    var time: Double
    var residentKB: Int
    var threads: Int
    var descriptors: Int
    var heapInUseKB: Int
    var heapHeldKB: Int

    static func take(at time: Double) -> ProcessSample {
        var rss = 0
        var threads = 0
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) {
            for line in status.split(separator: "\n") {
                let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == ":" })
                guard parts.count >= 2 else { continue }
                if parts[0] == "VmRSS" { rss = Int(parts[1]) ?? 0 }
                if parts[0] == "Threads" { threads = Int(parts[1]) ?? 0 }
            }
        }
        // Listing the folder opens one descriptor itself; it is the same in every sample.
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        let heap = bench_heap_take()
        return ProcessSample(
            time: time, residentKB: rss, threads: threads, descriptors: fds,
            heapInUseKB: heap.in_use / 1024, heapHeldKB: heap.held / 1024)
    }

    /// Names of this process's threads (/proc/self/task/*/comm), sorted: says which thread
    /// came or went when the count changes.
    static func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }.sorted()
    }
}

enum Stats {
    /// The p-th percentile (0…100), nearest-rank on the sorted values.
    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }

    /// Least-squares slope of y over x.
    static func slope(_ x: [Double], _ y: [Double]) -> Double {
        guard x.count >= 2 else { return 0 }
        let mx = x.reduce(0, +) / Double(x.count)
        let my = y.reduce(0, +) / Double(y.count)
        var num = 0.0
        var den = 0.0
        for (a, b) in zip(x, y) {
            num += (a - mx) * (b - my)
            den += (a - mx) * (a - mx)
        }
        return den > 0 ? num / den : 0
    }
}

/// Prints one JSON object on stdout (the line Tools/bench reads).
func emitJSON(_ object: [String: Any]) {
    guard JSONSerialization.isValidJSONObject(object),
        let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    else {
        FileHandle.standardError.write(Data("bench-pipeline: result is not valid JSON: \(object)\n".utf8))
        return
    }
    FileHandle.standardOutput.write(data + Data("\n".utf8))
}

/// Rounds for the report.
func r(_ value: Double, _ digits: Int = 3) -> Double {
    guard value.isFinite else { return -1 }
    let f = pow(10.0, Double(digits))
    return (value * f).rounded() / f
}

/// Parses "x,y,w,h" in device space.
func parseRect(_ text: String) -> CGRect? {
    let n = text.split(separator: ",").compactMap { Double($0) }
    guard n.count == 4 else { return nil }
    return CGRect(x: n[0], y: n[1], width: n[2], height: n[3])
}

/// Collects what a metadata output delivers: per-frame object counts, the time each frame's
/// result arrived (for latency), and the track events.
///
/// Threading: the delegate methods run on the output's serial delegate queue; readers call
/// `snapshot` after `waitUntilIdle()` or while running (the state is behind a Mutex).
final class MetadataRecorder: CaptureMetadataOutputObjectsDelegate {
    struct State {
        /// Frame time (seconds) → monotonic time its result reached the delegate.
        var arrivals: [Double: Double] = [:]
        var faceObjects = 0
        var codeObjects = 0
        var framesWithObjects = 0
        var events: [MetadataEvent] = []
    }
    let state = Mutex(State())
    let keepsEvents: Bool
    let keepsArrivals: Bool

    init(keepsEvents: Bool = false, keepsArrivals: Bool = false) {
        self.keepsEvents = keepsEvents
        self.keepsArrivals = keepsArrivals
    }

    func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [any MetadataObject], from connection: CaptureConnection
    ) {
        let t = now()
        guard let first = metadataObjects.first else { return }
        let faces = metadataObjects.filter { $0.type == .face }.count
        let keepsArrivals = keepsArrivals
        state.withLock {
            $0.faceObjects += faces
            $0.codeObjects += metadataObjects.count - faces
            $0.framesWithObjects += 1
            if keepsArrivals { $0.arrivals[first.time.seconds] = t }
        }
    }

    func metadataOutput(_ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection)
    {
        guard keepsEvents else { return }
        state.withLock { $0.events += events }
    }
}

/// Records the monotonic time each frame reached a video data output (native format, no
/// conversion): the frame clock's release times, give or take a queue hop.
final class ReleaseRecorder: CaptureVideoDataOutputSampleBufferDelegate {
    /// Frame time (seconds) → monotonic time it arrived.
    let arrivals = Mutex<[Double: Double]>([:])

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        let t = now()
        arrivals.withLock { $0[sampleBuffer.presentationTimeStamp.seconds] = t }
    }
}

/// Opens a session on `device` with `outputs`, runs it until the input ends, and waits until
/// every metadata output is idle. Returns the wall seconds from `startRunning` to idle.
func runToEnd(device: CaptureDevice, outputs: [CaptureOutput]) throws -> Double {
    let session = CaptureSession()
    try session.setSessionPreset(.inputPriority)
    try session.addInput(try CaptureDeviceInput(device: device))
    for output in outputs { try session.addOutput(output) }
    let start = now()
    try session.startRunning()
    session.waitUntilStopped()
    for case let m as CaptureMetadataOutput in outputs { m.waitUntilIdle() }
    let seconds = now() - start
    if let error = session.lastRuntimeError { throw error }
    return seconds
}

/// Parses "face,qr" into metadata types.
func parseTypes(_ text: String) -> [MetadataObjectType] {
    text.split(separator: ",").map { MetadataObjectType(rawValue: String($0)) }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Which detectors a measurement runs.
enum StageChoice: String, ExpressibleByArgument, Sendable {
    /// The library's default detectors (YuNet faces, ZBar codes).
    case real
    /// A face stage that does no work (`PassThroughFaceStage`): the framework's own cost.
    case none
}

/// A metadata output looking for `types` with the chosen stages (`none`: faces only, no work).
func makeMetadataOutput(_ stages: StageChoice, types: [MetadataObjectType]) throws -> CaptureMetadataOutput {
    switch stages {
    case .real:
        return try makeDetectingOutput(types)
    case .none:
        let output = CaptureMetadataOutput(faceStage: PassThroughFaceStage(), codeStage: nil)
        try output.setMetadataObjectTypes([.face])
        return output
    }
}

/// The face detector configuration a measurement uses (`FaceDetector.Configuration`).
enum FaceDetectionChoice: String, ExpressibleByArgument, Sendable {
    /// `.realTime`, the metadata output's default.
    case realtime
    /// `.standard`: frames up to 1280 px at their own size, as the Python loop runs YuNet at 720p.
    case standard

    var configuration: FaceDetector.Configuration { self == .realtime ? .realTime : .standard }
}

/// A metadata output looking for `types` with the library's detectors (faces as `faceDetection`,
/// by default the output's own default).
func makeDetectingOutput(_ types: [MetadataObjectType], faceDetection: FaceDetector.Configuration = .realTime) throws
    -> CaptureMetadataOutput
{
    let output = CaptureMetadataOutput(faceDetection: faceDetection)
    try output.setMetadataObjectTypes(types)
    return output
}
