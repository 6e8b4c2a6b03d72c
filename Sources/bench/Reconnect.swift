// Reconnects (issue 32 goal 2): how fast a phone gets back in after its link drops. Each client opens a new
// connection (TCP connect, TLS handshake for wss://, WebSocket upgrade), sends `initialize`, waits for its answer,
// closes, and starts again, for `--seconds` (bounded by `--max-connections` per client too).

import Foundation
import HummingbirdWSClient
import NIOWebSocket
import Synchronization

/// Closed-loop reconnects: connections per second (each one answered `initialize`), and the time from starting the
/// TCP connect to reading the `initialize` answer (p50, p99, max) over every connection of every client.
func runReconnect(_ args: Args) async throws {
    let nofile = raiseFileLimit(args.int("nofile", 65536))
    let url = args.string("url", "wss://127.0.0.1:9099/")
    let clients = max(args.int("clients", 50), 1)
    let seconds = min(args.double("seconds", 3), 60)
    let maxPerClient = min(args.int("max-connections", 100_000), 1_000_000)
    let stats = Stats()
    let rounds = min(args.int("rounds", 0), 1000)
    if rounds > 0 {
        try await reconnectBursts(url: url, clients: clients, rounds: rounds, stats: stats, nofile: nofile)
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
                        try await reconnectOnce(url: url, stats: stats)
                    } catch {
                        stats.error()
                    }
                }
            }
        }
        try await group.waitForAll()
    }
    report(stats: stats, clients: clients, seconds: Double(now() - start) / 1e9, nofile: nofile)
}

/// One reconnect: connect (TLS for wss://), upgrade, `initialize`, its answer (the time to it goes into `stats`), close.
func reconnectOnce(url: String, stats: Stats) async throws {
    let t0 = now()
    try await WebSocketClient.connect(
        url: url, configuration: benchClientConfiguration(url), tlsConfiguration: benchTLS(url), logger: benchLogger
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
func reconnectBursts(url: String, clients: Int, rounds: Int, stats: Stats, nofile: Int) async throws {
    let start = now()
    for _ in 0..<rounds {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<clients {
                group.addTask {
                    do { try await reconnectOnce(url: url, stats: stats) } catch { stats.error() }
                }
            }
        }
        try await Task.sleep(for: .milliseconds(100))
    }
    report(stats: stats, clients: clients, seconds: Double(now() - start) / 1e9, nofile: nofile, rounds: rounds)
}

func report(stats: Stats, clients: Int, seconds elapsed: Double, nofile: Int, rounds: Int = 0) {
    let state = stats.state.withLock { $0 }
    let sorted = state.latencies.sorted()
    func pct(_ p: Double) -> Double {
        sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000
    }
    emit([
        "clients": clients, "connections": sorted.count, "errors": state.errors, "seconds": elapsed,
        "per_s": Double(sorted.count) / max(elapsed, 1e-9), "p50_ms": pct(0.5), "p99_ms": pct(0.99),
        "max_ms": Double(sorted.last ?? 0) / 1000, "nofile": nofile, "rounds": rounds,
    ])
}
