import ArgumentParser
import CaptureKit
import CaptureKitTesting
import Foundation
import Synchronization

/// Long run at 720p30 with faces and codes coming and going: memory, descriptors and threads
/// must stay flat, and every appearance must be reported.
struct Soak: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run 720p30 synthetic input with faces and codes appearing and leaving; sample RSS, fds, threads.")

    @OptionGroup var fixtures: FixtureOptions
    @Option(help: "Seconds to run (rounded up to whole 12 s cycles).") var seconds = 60.0
    @Option(help: "Seconds between samples (default: 2 for runs up to 5 min, else 5).") var sampleInterval: Double?
    @Option(help: "Detectors: real, or none (a no-work stage; no events, for checking the harness).")
    var stages: StageChoice = .real
    @Flag(
        name: .customLong("check"),
        help: """
            Exit 1 when descriptors or threads grew, an appearance was not reported, or, after the \
            warm-up, resident memory grew by 8 MB or more or malloc's bytes in use by 4 MB or more \
            (median of the last third of the samples against the first third) \
            (gross leaks: a 60 s run cannot judge a slope of 1 MB per 10 min). For CI.
            """)
    var gate = false

    func run() throws {
        let folder = try fixtures.folder()
        let cycle = BenchScenes.soakCycle(fixtures: folder)
        let cycles = max(1, Int((seconds / BenchScenes.soakCycleSeconds).rounded(.up)))
        let source = try LoopingSceneSource(scene: cycle, cycles: cycles)
        let device = try CaptureDevice(
            uniqueID: "soak", localizedName: "Soak scene", deviceType: .synthetic, source: source)
        let metadata = try makeMetadataOutput(stages, types: [.face, .qr])
        let recorder = MetadataRecorder(keepsEvents: true)
        metadata.setMetadataObjectsDelegate(recorder, queue: DispatchQueue(label: "bench.delegate"))

        let session = CaptureSession()
        try session.setSessionPreset(.inputPriority)
        try session.addInput(try CaptureDeviceInput(device: device))
        try session.addOutput(metadata)

        let interval = sampleInterval ?? (seconds <= 300 ? 2 : 5)
        let samples = Mutex<[ProcessSample]>([])
        let start = now()
        let cpu0 = cpuSeconds()
        // Thread names when the count first differs from the previous sample's.
        let threadChanges = Mutex<[(time: Double, names: [String])]>([])
        // The sampler is a thread of its own, not a dispatch timer: a timer's handler runs on a
        // libdispatch pool thread, and when it overlapped the delegate queue's work the pool
        // grew by one, which the soak then reported as the pipeline's thread growth.
        let stopSampling = Atomic<Bool>(false)
        let samplerDone = DispatchSemaphore(value: 0)
        let sampler = Thread {
            var next = now()
            while !stopSampling.load(ordering: .relaxed) {
                takeSample()
                next += interval
                while !stopSampling.load(ordering: .relaxed) && now() < next {
                    Thread.sleep(forTimeInterval: min(0.05, max(0, next - now())))
                }
            }
            samplerDone.signal()
        }
        @Sendable func takeSample() {
            let sample = ProcessSample.take(at: now() - start)
            let previous = samples.withLock { s -> Int? in
                defer { s.append(sample) }
                return s.last?.threads
            }
            if previous != sample.threads {
                let names = ProcessSample.threadNames()
                threadChanges.withLock { $0.append((sample.time, names)) }
            }
        }
        sampler.start()
        try session.startRunning()
        session.waitUntilStopped()
        metadata.waitUntilIdle()
        stopSampling.store(true, ordering: .relaxed)
        samplerDone.wait()
        let wall = now() - start
        let cpu = cpuSeconds() - cpu0
        if let error = session.lastRuntimeError { throw error }

        let events = recorder.state.withLock { $0.events }
        let check = SoakCheck.match(events: events, cycles: cycles)
        let all = samples.withLock { $0 }
        // Start-up (model load, first allocations, thread pools, the first restart of the
        // scene's cycle at 12 s) is excluded from the trend.
        let warmUp = max(15, wall * 0.1)
        let steady = all.filter { $0.time >= warmUp }
        let perTenMinutes = 600.0
        let x = steady.map(\.time)
        let rssSlope = Stats.slope(x, steady.map { Double($0.residentKB) / 1024 }) * perTenMinutes
        let fdSlope = Stats.slope(x, steady.map { Double($0.descriptors) }) * perTenMinutes
        let threadSlope = Stats.slope(x, steady.map { Double($0.threads) }) * perTenMinutes
        let inUseSlope = Stats.slope(x, steady.map { Double($0.heapInUseKB) / 1024 }) * perTenMinutes
        let heldSlope = Stats.slope(x, steady.map { Double($0.heapHeldKB) / 1024 }) * perTenMinutes
        let firstWindow = steady.prefix(3)
        let fdsGrew = (steady.last?.descriptors ?? 0) > (firstWindow.map(\.descriptors).max() ?? 0)
        let threadsGrew = (steady.last?.threads ?? 0) > (firstWindow.map(\.threads).max() ?? 0)
        emitJSON([
            "kind": "soak", "seconds": r(wall, 1), "cycles": cycles, "frames": session.capturedFrameCount,
            "analysed": metadata.processedFrameCount, "skipped": metadata.skippedFrameCount,
            "cpu_percent": r(cpu / wall * 100, 1), "samples": all.count, "warm_up_s": r(warmUp, 1),
            "rss_mb_first": r(Double(steady.first?.residentKB ?? 0) / 1024, 2),
            "rss_mb_last": r(Double(steady.last?.residentKB ?? 0) / 1024, 2),
            "rss_mb_max": r(Double(all.map(\.residentKB).max() ?? 0) / 1024, 2),
            "rss_slope_mb_per_10min": r(rssSlope, 3),
            "heap_in_use_mb_first": r(Double(steady.first?.heapInUseKB ?? 0) / 1024, 2),
            "heap_in_use_mb_last": r(Double(steady.last?.heapInUseKB ?? 0) / 1024, 2),
            "heap_in_use_slope_mb_per_10min": r(inUseSlope, 3),
            "heap_held_mb_first": r(Double(steady.first?.heapHeldKB ?? 0) / 1024, 2),
            "heap_held_mb_last": r(Double(steady.last?.heapHeldKB ?? 0) / 1024, 2),
            "heap_held_slope_mb_per_10min": r(heldSlope, 3),
            "fds_first": steady.first?.descriptors ?? 0, "fds_last": steady.last?.descriptors ?? 0,
            "fds_slope_per_10min": r(fdSlope, 3), "fds_grew": fdsGrew,
            "threads_first": steady.first?.threads ?? 0, "threads_last": steady.last?.threads ?? 0,
            "threads_max": all.map(\.threads).max() ?? 0,
            "threads_slope_per_10min": r(threadSlope, 3), "threads_grew": threadsGrew,
            "faces_expected": check.facesExpected, "faces_reported": check.facesMatched,
            "face_enters_total": check.faceEnters, "codes_expected": check.codesExpected,
            "codes_reported": check.codesMatched, "code_appears_total": check.codeAppears,
            "thread_changes": threadChanges.withLock { $0 }.map { ["t": r($0.time, 1), "names": $0.names] as [String: Any] },
            "series": all.map {
                [
                    "t": r($0.time, 1), "rss_kb": $0.residentKB, "fds": $0.descriptors, "threads": $0.threads,
                    "heap_in_use_kb": $0.heapInUseKB, "heap_held_kb": $0.heapHeldKB,
                ]
            },
        ])
        guard gate else { return }
        // Growth is the median of the steady phase's last third against its first third: one
        // sample against another read a 720p frame in flight (3.7 MB) as growth, depending on
        // the machine's speed at those two instants.
        let third = max(1, steady.count / 3)
        func median(_ values: [Int]) -> Double {
            let sorted = values.sorted()
            return sorted.isEmpty ? 0 : Double(sorted[sorted.count / 2])
        }
        let rssGrowth = (median(steady.suffix(third).map(\.residentKB)) - median(steady.prefix(third).map(\.residentKB))) / 1024
        let heapGrowth = (median(steady.suffix(third).map(\.heapInUseKB)) - median(steady.prefix(third).map(\.heapInUseKB))) / 1024
        var failures: [String] = []
        if fdsGrew { failures.append("open descriptors grew") }
        if threadsGrew { failures.append("threads grew") }
        if check.facesMatched < check.facesExpected { failures.append("face appearances lost") }
        if check.codesMatched < check.codesExpected { failures.append("code appearances lost") }
        if rssGrowth >= 8 { failures.append("resident memory grew by 8 MB or more") }
        if heapGrowth >= 4 { failures.append("malloc bytes in use grew by 4 MB or more") }
        let summary = String(
            format: "soak check: %d of %d frames analysed; descriptors %d → %d; threads %d → %d; faces %d/%d; codes %d/%d; after the warm-up resident memory %+.1f MB, bytes in use %+.1f MB",
            metadata.processedFrameCount, session.capturedFrameCount, steady.first?.descriptors ?? 0,
            steady.last?.descriptors ?? 0, steady.first?.threads ?? 0, steady.last?.threads ?? 0, check.facesMatched,
            check.facesExpected, check.codesMatched, check.codesExpected, rssGrowth, heapGrowth)
        FileHandle.standardError.write(Data((summary + (failures.isEmpty ? ": ok" : ": FAILED: " + failures.joined(separator: ", ")) + "\n").utf8))
        if !failures.isEmpty { throw ExitCode(1) }
    }
}

/// Compares the soak's events with the scene's ground truth.
enum SoakCheck {
    struct Result {
        var facesExpected = 0
        var facesMatched = 0
        var faceEnters = 0
        var codesExpected = 0
        var codesMatched = 0
        var codeAppears = 0
    }

    /// An appearance counts as reported when an enter (faces) or appear event with its payload
    /// (codes) has a frame time inside its window (plus 0.5 s for a late first detection).
    static func match(events: [MetadataEvent], cycles: Int) -> Result {
        var result = Result()
        var enters: [Double] = []
        var appears: [(String, Double)] = []
        for event in events {
            switch event {
            case .faceEntered(let f): enters.append(f.time.seconds)
            case .codeAppeared(let c): appears.append((c.stringValue ?? "", c.time.seconds))
            default: break
            }
        }
        result.faceEnters = enters.count
        result.codeAppears = appears.count
        for c in 0..<cycles {
            let base = Double(c) * BenchScenes.soakCycleSeconds
            for a in BenchScenes.soakAppearances {
                let lo = base + a.appearsAt - 0.001
                let hi = base + a.disappearsAt + 0.5
                switch a.kind {
                case .face:
                    result.facesExpected += 1
                    if enters.contains(where: { $0 >= lo && $0 < hi }) { result.facesMatched += 1 }
                case .code:
                    result.codesExpected += 1
                    if appears.contains(where: { $0.0 == a.payload && $0.1 >= lo && $0.1 < hi }) {
                        result.codesMatched += 1
                    }
                }
            }
        }
        return result
    }
}
