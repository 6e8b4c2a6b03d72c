// Reconnects (issue 32 goal 2): how fast a phone gets back in after its link drops. Each client opens a new
// connection (TCP connect, TLS handshake for wss://, WebSocket upgrade), sends `initialize`, waits for its answer,
// closes, and starts again, for `--seconds` (bounded by `--max-connections` per client too).

import Foundation
import Glibc
import HummingbirdWSClient
import NIOSSL
import NIOWebSocket
import Synchronization

/// Closed-loop reconnects: connections per second (each one answered `initialize`), and the time from starting the
/// TCP connect to reading the `initialize` answer (p50, p99, max) over every connection of every client.
func runReconnect(_ args: Args) async throws {
    let nofile = raiseFileLimit(args.int("nofile", 65536))
    let cpuStart = benchCPUSeconds()
    let url = args.string("url", "wss://127.0.0.1:9099/")
    let clients = max(args.int("clients", 50), 1)
    let seconds = min(args.double("seconds", 3), 60)
    let maxPerClient = min(args.int("max-connections", 100_000), 1_000_000)
    let stats = Stats()
    let rounds = min(args.int("rounds", 0), 1000)
    // `--groups x25519`: the post-quantum hybrid's share of a handshake, measured apart (``benchTLS(_:groups:)``).
    let tls = benchTLS(url, groups: args.string("groups", "default"))
    if rounds > 0 {
        try await reconnectBursts(
            url: url, tls: tls, clients: clients, rounds: rounds, stats: stats, nofile: nofile, cpuStart: cpuStart)
        return
    }
    let start = now()
    let end = start + UInt64(seconds * 1e9)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<clients {
            group.addTask {
                var made = 0
                while made < maxPerClient, now() < end {
                    made += 1
                    do {
                        try await reconnectOnce(url: url, tls: tls, stats: stats)
                    } catch {
                        stats.error()
                    }
                }
            }
        }
        try await group.waitForAll()
    }
    report(stats: stats, clients: clients, seconds: Double(now() - start) / 1e9, nofile: nofile, cpuStart: cpuStart)
}

/// One reconnect: connect (TLS for wss://), upgrade, `initialize`, its answer (the time to it goes into `stats`), close.
func reconnectOnce(url: String, tls: TLSConfiguration?, stats: Stats) async throws {
    let t0 = now()
    try await WebSocketClient.connect(
        url: url, configuration: benchClientConfiguration(url), tlsConfiguration: tls, logger: benchLogger
    ) { inbound, outbound, _ in
        var iterator = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
        try await outbound.write(.text(initializeFrame))
        guard try await iterator.next() != nil else { return }
        stats.add([UInt32(min((now() - t0) / 1000, UInt64(UInt32.max)))])
        try await outbound.close(.normalClosure, reason: nil)
    }
}

/// `--rounds R`: R times, every client reconnects at the same moment (as phones do when the desk's Wi-Fi comes back),
/// then all wait for the slowest and pause 100 ms; the times are over every connection of every round.
func reconnectBursts(
    url: String, tls: TLSConfiguration?, clients: Int, rounds: Int, stats: Stats, nofile: Int, cpuStart: Double
) async throws {
    let start = now()
    for _ in 0..<rounds {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<clients {
                group.addTask {
                    do { try await reconnectOnce(url: url, tls: tls, stats: stats) } catch { stats.error() }
                }
            }
        }
        try await Task.sleep(for: .milliseconds(100))
    }
    report(
        stats: stats, clients: clients, seconds: Double(now() - start) / 1e9, nofile: nofile, rounds: rounds,
        cpuStart: cpuStart)
}

func report(stats: Stats, clients: Int, seconds elapsed: Double, nofile: Int, rounds: Int = 0, cpuStart: Double = 0) {
    let state = stats.state.withLock { $0 }
    let sorted = state.latencies.sorted()
    func pct(_ p: Double) -> Double {
        sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000
    }
    emit([
        "clients": clients, "connections": sorted.count, "errors": state.errors, "seconds": elapsed,
        "per_s": Double(sorted.count) / max(elapsed, 1e-9), "p50_ms": pct(0.5), "p99_ms": pct(0.99),
        "max_ms": Double(sorted.last ?? 0) / 1000, "nofile": nofile, "rounds": rounds,
        // The load generator's own CPU (this process, user + system, from the start of the run) per connection: on a
        // 2-core machine the clients' handshakes share the cores with the server's, so a burst's p99 is bounded below
        // by both.
        "client_cpu_us": (benchCPUSeconds() - cpuStart) * 1e6 / Double(max(sorted.count, 1)),
    ])
}

/// This process's CPU time so far (user + system), in seconds.
func benchCPUSeconds() -> Double {
    var usage = rusage()
    guard getrusage(Int32(RUSAGE_SELF.rawValue), &usage) == 0 else { return 0 }
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
