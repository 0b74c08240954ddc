import Foundation

/// Hosts on one machine for tests of what crosses a network: each host a network namespace
/// (`ip netns`) with its own address on one bridge that lives in this process's namespace, so
/// the test itself reaches every host. A host's programs run under `ip netns exec NAME` and,
/// with `unshare --uts`, under a hostname of their own, as on separate boxes.
///
/// Needs root (CAP_NET_ADMIN) and iproute2; `TestHosts.missing` says why not otherwise. Every
/// namespace and the bridge are removed by `remove()` (and on deinit).
///
/// Threading: one test owns it.
package final class TestHosts: @unchecked Sendable {
    // @unchecked: set up once by the owning test, then only read.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// One host: its namespace and its address on the bridge.
    package struct Host: Sendable {
        package var name: String
        package var namespace: String
        package var address: String

        /// `command` run in this host's namespace under `hostname` (`unshare --uts`).
        package func command(_ command: [String], hostname: String? = nil) -> [String] {
            ["/usr/sbin/ip", "netns", "exec", namespace]
                + (hostname.map { ["/usr/bin/unshare", "--uts", "/bin/sh", "-c", "hostname \"$0\" && exec \"$@\"", $0] } ?? [])
                + command
        }
    }

    package let hosts: [Host]
    private let bridge: String
    /// This process's address on the bridge.
    package let localAddress: String

    /// Why hosts cannot be made here, or nil when they can.
    package static var missing: String? {
        guard getuid() == 0 else { return "needs root for network namespaces" }
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") else { return "/usr/sbin/ip is missing (iproute2)" }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { return "/usr/bin/unshare is missing" }
        // A namespace made and removed at once: containers without CAP_NET_ADMIN refuse it.
        let probe = "cvcamprobe\(getpid())"
        guard (try? run(["netns", "add", probe])) != nil else { return "this machine refuses `ip netns add`" }
        _ = try? run(["netns", "delete", probe])
        return nil
    }

    /// Makes one namespace per name, each with an address 10.213.N.x/24 on a new bridge.
    package init(_ names: [String]) throws {
        let tag = String(format: "%04x", UInt32.random(in: 0...0xFFFF))
        let subnet = Int.random(in: 1...250)
        bridge = "cvbr\(tag)"
        localAddress = "10.213.\(subnet).254"
        var made: [Host] = []
        do {
            try Self.run(["link", "add", bridge, "type", "bridge"])
            try Self.run(["addr", "add", "\(localAddress)/24", "dev", bridge])
            try Self.run(["link", "set", bridge, "up"])
            for (index, name) in names.enumerated() {
                let host = Host(name: name, namespace: "cvns\(tag)\(index)", address: "10.213.\(subnet).\(index + 1)")
                let outside = "cv\(tag)\(index)o"
                let inside = "cv\(tag)\(index)i"
                try Self.run(["netns", "add", host.namespace])
                made.append(host)
                try Self.run(["link", "add", outside, "type", "veth", "peer", "name", inside])
                try Self.run(["link", "set", inside, "netns", host.namespace])
                try Self.run(["link", "set", outside, "master", bridge])
                try Self.run(["link", "set", outside, "up"])
                try Self.run(["-n", host.namespace, "addr", "add", "\(host.address)/24", "dev", inside])
                try Self.run(["-n", host.namespace, "link", "set", inside, "up"])
                try Self.run(["-n", host.namespace, "link", "set", "lo", "up"])
            }
        } catch {
            for host in made { _ = try? Self.run(["netns", "delete", host.namespace]) }
            _ = try? Self.run(["link", "delete", bridge])
            throw error
        }
        hosts = made
    }

    deinit { remove() }

    /// Removes the namespaces (and with them their ends of the links) and the bridge.
    package func remove() {
        for host in hosts { _ = try? Self.run(["netns", "delete", host.namespace]) }
        _ = try? Self.run(["link", "delete", bridge])
    }

    @discardableResult
    private static func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "ip \(arguments.joined(separator: " ")): \(text)")
        }
        return text
    }
}
