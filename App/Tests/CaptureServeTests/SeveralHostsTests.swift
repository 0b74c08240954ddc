import Foundation
import Testing
import AppTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Beyond one box: three hosts, each a network namespace with a hostname of its own, run one
/// `cvcam serve` each with the default client ID and topic prefix and two synthetic cameras,
/// against one Mosquitto on a fourth host. Every camera's events reach a subscriber, no daemon
/// takes another's session, and a broker restart mid-run loses nothing from any of them.
///
/// Needs root and network namespaces (`ip netns`): skipped with the reason elsewhere.
@Suite(.serialized, .enabled(if: TestHosts.missing == nil && MosquittoTestBroker.missing == nil, "\(TestHosts.missing ?? MosquittoTestBroker.missing ?? "")"))
struct SeveralHostsTests {
    @Test func threeHostsShareOneBrokerThroughARestart() throws {
        let network = try TestHosts(["broker", "box1", "box2", "box3"])
        defer { network.remove() }
        let brokerHost = network.hosts[0]
        let boxes = Array(network.hosts.dropFirst())
        let launch = ["/usr/sbin/ip", "netns", "exec", brokerHost.namespace]
        guard let broker = try MosquittoTestBroker.start(host: brokerHost.address, port: 1883, launchPrefix: launch) else { return }
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }

        let cameras = boxes.map { box in ["door", "gate"].map { "\(box.name)-\($0)" } }
        let subscriber = try ServeBrokerTests.Subscriber(broker, filters: ["cvcam/#"], session: "hosts-test-sub")
        var daemons: [ServeProcess] = []
        for (box, names) in zip(boxes, cameras) {
            let config = dir.appendingPathComponent("\(box.name).yaml")
            let passwordFile = dir.appendingPathComponent("\(box.name).password")
            try broker.password.write(to: passwordFile, atomically: true, encoding: .utf8)
            // No clientID and no topicPrefix: the defaults, as three boxes set up alike would have.
            try ("""
                mqtt:
                  broker: \(broker.url)
                  username: \(broker.username)
                  passwordFile: \(passwordFile.path)
                  keepAlive: 5
                cameras:

                """ + names.map { name in
                    """
                      - name: \(name)
                        input: "synthetic:size=320x240,fps=10,qr=\(name.uppercased())"
                        codes: {types: [qr], repeatInterval: 0.5}
                        motion: false  # every frame analysed: the repeats are the heartbeat this test counts

                    """
                }.joined()).write(to: config, atomically: true, encoding: .utf8)
            daemons.append(try ServeProcess(config: config.path, prefix: box.command([], hostname: box.name)))
        }
        let all = cameras.flatMap { $0 }
        let log = { daemons.map(\.stderr).joined(separator: "\n---\n") + "\nbroker: \(broker.log)" }

        // Every camera's code, from every host.
        let arrived = subscriber.wait(60) { s in all.allSatisfy { ServeBrokerTests.codeTimes(s, $0).count >= 3 } }
        #expect(arrived, "\(log())")

        // The broker restarts mid-run: what every camera published meanwhile arrives, in order.
        let before = Dictionary(uniqueKeysWithValues: all.map { ($0, ServeBrokerTests.codeTimes(subscriber, $0).last ?? 0) })
        broker.stop()
        Thread.sleep(forTimeInterval: 3)
        try broker.restart()
        let recovered = subscriber.wait(60) { s in
            all.allSatisfy { (ServeBrokerTests.codeTimes(s, $0).last ?? 0) > before[$0]! + 6 }
        }
        #expect(recovered, "\(log())")
        for camera in all {
            let times = ServeBrokerTests.codeTimes(subscriber, camera)
            #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "\(camera) out of order: \(times)")
            // A lost outage backlog leaves a gap of seconds (it lasted 3); a busy box may delay one repeat by a frame.
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 < 2.05 }, "\(camera) lost events: \(times)")
            #expect(broker.retained("cvcam/\(camera)/availability") == "online")
        }
        // No daemon ever took another's session over (the broker logs each takeover).
        #expect(!broker.log.contains("already connected, closing old connection"), "\(broker.log)")
        #expect(daemons.allSatisfy { $0.process.isRunning }, "\(log())")

        for daemon in daemons { daemon.signal(SIGTERM) }
        for daemon in daemons { #expect(daemon.waitForExit(30) == 0, "\(daemon.stderr)") }
    }
}
