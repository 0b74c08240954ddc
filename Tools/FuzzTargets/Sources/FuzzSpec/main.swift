// Arbitrary text as `--input synthetic:SPEC`, through the command tree's parsing and validation
// (which parses the scene): it must throw a message or accept the scene, never trap (numbers out
// of range, huge sizes, repeated keys, invalid UTF-8). Nothing is run.
import CVCamCommands
import FuzzSupport

runFuzzer { data, count in
    guard let start = data.map(UnsafeRawPointer.init) else { return 0 }
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    _ = try? CVCam.parseAsRoot(["scan", "--input", "synthetic:" + text])
    return 0
}
