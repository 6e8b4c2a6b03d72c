// bench: load generator and reference servers for oa-bridge's benchmarks (see BENCHMARKS.md, scripts/bench).
// Every loop is bounded in count and time; it only talks to the URL given (the driver passes 127.0.0.1).

import BridgeServer
import BridgeSessionStore
import BridgeTLS
import Foundation
import Hummingbird
import HummingbirdWSClient
import HummingbirdWebSocket
import Logging
import NIOWebSocket
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Command-line arguments as `--key value` pairs.
struct Args {
    var values: [String: String] = [:]
    init(_ list: ArraySlice<String>) {
        var iterator = list.makeIterator()
        while let key = iterator.next() {
            if key.hasPrefix("--") { values[String(key.dropFirst(2))] = iterator.next() ?? "" }
        }
    }
    func int(_ key: String, _ fallback: Int) -> Int { values[key].flatMap(Int.init) ?? fallback }
    func double(_ key: String, _ fallback: Double) -> Double { values[key].flatMap(Double.init) ?? fallback }
    func string(_ key: String, _ fallback: String) -> String { values[key] ?? fallback }
}

/// Raises RLIMIT_NOFILE to its hard limit (or `want`) and returns the soft limit reached.
func raiseFileLimit(_ want: Int) -> Int {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    let target = min(rlim_t(want), limit.rlim_max)
    if limit.rlim_cur < target {
        limit.rlim_cur = target
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    return Int(limit.rlim_cur)
}

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

func emit(_ object: [String: Any]) {
    if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]),
       let text = String(data: data, encoding: .utf8) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}

var logger = Logger(label: "bench")
logger.logLevel = .error
let benchLogger = logger

let initializeFrame = #"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#

/// The trivial request: session/prompt for a session that does not exist; the bridge answers it itself
/// (an "unknown session" error) without reaching the agent.
///
/// The echo servers send it straight back.
func trivialFrame(_ id: Int) -> String {
    #"{"jsonrpc":"2.0","id":\#(id),"method":"session/prompt","params":{"sessionId":"bench-none","prompt":[]}}"#
}

/// A value shared between client tasks, behind a lock.
final class Cell<T>: @unchecked Sendable {
    private var value: T
    private let lock = NSLock()
    init(_ value: T) { self.value = value }
    func withLock<R>(_ body: (inout T) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// Thread-safe accumulation of latencies and counts.
final class Stats: Sendable {
    struct State {
        var latencies: [UInt32] = []
        var errors = 0
        var opened = 0
    }
    let state = Mutex(State())
    func add(_ batch: [UInt32]) { state.withLock { $0.latencies.append(contentsOf: batch) } }
    func error() { state.withLock { $0.errors += 1 } }
    func open() { state.withLock { $0.opened += 1 } }
}

// MARK: - Servers

/// Bare Hummingbird WebSocket echo: the framework's floor.
func runEcho(_ args: Args) async throws {
    _ = raiseFileLimit(args.int("nofile", 65536))
    let port = args.int("port", 9199)
    let router = Router(context: BasicWebSocketRequestContext.self)
    router.ws("/") { inbound, outbound, _ in
        for try await message in inbound.messages(maxSize: 1 << 20) {
            switch message {
            case .text(let text): try await outbound.write(.text(text))
            case .binary(let buffer): try await outbound.write(.binary(buffer))
            }
        }
    }
    let app = Application(
        router: Router(),
        server: .http1WebSocketUpgrade(webSocketRouter: router, configuration: WebSocketServerConfiguration(maxFrameSize: 1 << 20)),
        configuration: .init(address: .hostname("127.0.0.1", port: port)),
        onServerRunning: { _ in emit(["listening": port]) },
        logger: benchLogger)
    try await app.runService()
}

/// The bridge in-process (BridgeServer, no auth, no discovery) with a configurable connection cap, for the
/// scale run beyond the CLI's fixed 1024.
func runBridge(_ args: Args) async throws {
    _ = raiseFileLimit(args.int("nofile", 65536))
    var configuration = BridgeServerConfiguration(serverName: "bench")
    configuration.host = "127.0.0.1"
    configuration.port = args.int("port", 9198)
    configuration.maxConnections = args.int("max-connections", 20000)
    configuration.maxPendingConnectionsPerAddress = args.int("max-pending-per-address", 20000)
    // --ping-interval S: keepalive pings every S seconds as `serve` sends them (30); 0, the default here: none.
    let ping = args.int("ping-interval", 0)
    configuration.pingInterval = ping > 0 ? .seconds(ping) : nil
    if let agent = args.values["agent"] { configuration.agentCommand = agent.split(separator: " ").map(String.init) }
    // --tls-state DIR: serve wss:// too, with the identity kept in DIR (issue 32); --tls-coalesce no: without the
    // TLS write coalescer, for before/after runs of one binary.
    if let directory = args.values["tls-state"] {
        configuration.tlsIdentity = try BridgeIdentity.loadOrCreate(
            in: URL(fileURLWithPath: directory), names: BridgeIdentityNames(hostName: "localhost"))
    }
    TLSSniffer.coalescesWrites.store(args.string("tls-coalesce", "yes") == "yes", ordering: .relaxed)
    // --event-loop-connections N: how many connections run on their channel's event loop (issue 32's A/B).
    if let count = args.values["event-loop-connections"].flatMap(Int.init) { configuration.eventLoopConnections = count }
    // --session-store DIR: sessions kept in DIR/sessions.sqlite as `serve` keeps them (issue 25 item 2), to measure
    // what the store costs the relay.
    if let directory = args.values["session-store"] {
        configuration.sessionStore = try SessionStore(directory: URL(fileURLWithPath: directory))
    }
    let server = BridgeServer(configuration: configuration, logger: benchLogger) { port in emit(["listening": port]) }
    try await server.run()
}

// MARK: - Clients

/// Closed-loop round trips: each client sends one request, waits for the answer, repeats.
func runLoad(_ args: Args) async throws {
    let nofile = raiseFileLimit(args.int("nofile", 65536))
    let url = args.string("url", "ws://127.0.0.1:9099/")
    let clients = args.int("clients", 1)
    let seconds = min(args.double("seconds", 3), 60)
    let maxPerClient = args.int("max-requests", 1_000_000)
    let initialize = args.string("initialize", "yes") == "yes"
    let stats = Stats()
    let started = Cell<UInt64>(0)
    let ready = Cell(0)
    let deadline = Cell<UInt64>(0)
    let allOpen = AsyncStream<Void>.makeStream()

    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<clients {
            group.addTask {
                do {
                    try await WebSocketClient.connect(url: url, configuration: benchClientConfiguration(url), tlsConfiguration: benchTLS(url), logger: benchLogger) { inbound, outbound, _ in
                        var iterator = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                        if initialize {
                            try await outbound.write(.text(initializeFrame))
                            _ = try await iterator.next()
                        }
                        stats.open()
                        // Wait until everyone is connected, so the timed phase has all clients.
                        let count = ready.withLock {
                            $0 += 1
                            return $0
                        }
                        if count == clients {
                            let t = now()
                            started.withLock { $0 = t }
                            deadline.withLock { $0 = t + UInt64(seconds * 1e9) }
                            allOpen.continuation.finish()
                        }
                        for await _ in allOpen.stream {}
                        let end = deadline.withLock { $0 }
                        var local: [UInt32] = []
                        local.reserveCapacity(4096)
                        var id = 1
                        while id <= maxPerClient {
                            let t0 = now()
                            if t0 >= end { break }
                            try await outbound.write(.text(trivialFrame(id)))
                            guard try await iterator.next() != nil else { break }
                            local.append(UInt32(min((now() - t0) / 1000, UInt64(UInt32.max))))
                            id += 1
                        }
                        stats.add(local)
                        try await outbound.close(.normalClosure, reason: nil)
                    }
                } catch {
                    stats.error()
                    let count = ready.withLock {
                        $0 += 1
                        return $0
                    }
                    if count == clients { allOpen.continuation.finish() }
                }
            }
        }
        try await group.waitForAll()
    }
    let elapsed = Double(now() - started.withLock { $0 }) / 1e9
    let state = stats.state.withLock { $0 }
    let sorted = state.latencies.sorted()
    func pct(_ p: Double) -> Double { sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000 }
    emit([
        "clients": clients, "opened": state.opened, "errors": state.errors, "requests": sorted.count,
        "seconds": elapsed, "rps": Double(sorted.count) / max(elapsed, 1e-9),
        "p50_ms": pct(0.5), "p99_ms": pct(0.99), "nofile": nofile,
    ])
}

/// Opens N idle connections (each answers initialize), says how many are open, holds them, closes.
func runIdle(_ args: Args) async throws {
    let nofile = raiseFileLimit(args.int("nofile", 65536))
    let url = args.string("url", "ws://127.0.0.1:9099/")
    let clients = args.int("clients", 100)
    let hold = min(args.double("hold", 3), 120)
    let openTimeout = min(args.double("open-timeout", 60), 300)
    let tls = benchTLS(url, groups: args.string("groups", "default"))
    let stats = Stats()
    let release = AsyncStream<Void>.makeStream()
    let t0 = now()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<clients {
            group.addTask {
                do {
                    try await WebSocketClient.connect(url: url, configuration: benchClientConfiguration(url), tlsConfiguration: tls, logger: benchLogger) { inbound, outbound, _ in
                        var iterator = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                        try await outbound.write(.text(initializeFrame))
                        _ = try await iterator.next()
                        stats.open()
                        for await _ in release.stream {}
                        try await outbound.close(.normalClosure, reason: nil)
                    }
                } catch {
                    stats.error()
                }
            }
        }
        group.addTask {
            // Report when every connection is open or failed (or the open timeout passes), hold, release.
            let limit = t0 + UInt64(openTimeout * 1e9)
            while now() < limit {
                let s = stats.state.withLock { $0 }
                if s.opened + s.errors >= clients { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            let s = stats.state.withLock { $0 }
            emit(["event": "open", "opened": s.opened, "errors": s.errors, "seconds": Double(now() - t0) / 1e9, "nofile": nofile])
            try await Task.sleep(for: .seconds(hold))
            release.continuation.finish()
        }
        try await group.waitForAll()
    }
    emit(["event": "closed"])
}

/// How every `session/update` the bridge sends starts (it writes the envelope fields in a fixed order).
let updatePrefix = Array(#"{"jsonrpc":"2.0","method":"session/update","#.utf8)

/// Connects `clients` raw WebSockets (wss:// too: ``TLSRawWebSocket``) and initializes them; client 0 makes a session and the others attach to it
/// with session/load.
///
/// Returns the sockets and the session's id.
func relaySetup(url: String, clients: Int, cwd: String) throws -> ([any RelaySocket], String) {
    let setupDeadline = now() + 30_000_000_000
    let sockets = try (0..<clients).map { _ in try makeRelaySocket(url: url) }
    for socket in sockets {
        try socket.sendText(initializeFrame)
        guard socket.nextText(until: setupDeadline) != nil else { throw RawWebSocket.Failure(description: "no answer to initialize") }
    }
    try sockets[0].sendText(#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"\#(cwd)","mcpServers":[]}}"#)
    guard let text = sockets[0].nextText(until: setupDeadline),
          let json = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
          let result = json["result"] as? [String: Any], let sessionID = result["sessionId"] as? String
    else { throw RawWebSocket.Failure(description: "session/new failed") }
    for socket in sockets.dropFirst() {
        try socket.sendText(#"{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"\#(sessionID)","cwd":"\#(cwd)","mcpServers":[]}}"#)
        guard socket.nextText(until: setupDeadline) != nil else { throw RawWebSocket.Failure(description: "no answer to session/load") }
    }
    return (sockets, sessionID)
}

/// Relay: client 0 makes a session and prompts; the others attach with session/load; everyone counts
/// session/update notifications until the prompt's updates are in.
///
/// Each client reads on a thread of its own with a raw socket (``RawWebSocket``), so counting costs next to
/// nothing next to the bridge's work.
func runRelay(_ args: Args) throws {
    _ = raiseFileLimit(args.int("nofile", 65536))
    let url = args.string("url", "ws://127.0.0.1:9099/")
    let clients = max(args.int("clients", 1), 1)
    let expected = args.int("count", 10000)
    let timeout = min(args.double("timeout", 30), 120)
    // The bridge confines sessions to its working directory: by default the directory both were started in.
    let cwd = args.string("cwd", FileManager.default.currentDirectoryPath)
    let (sockets, sessionID) = try relaySetup(url: url, clients: clients, cwd: cwd)
    let counts = Cell<[Int]>([])
    let finished = Cell<UInt64>(0)
    let done = DispatchGroup()
    let start = now()
    let end = start + UInt64(timeout * 1e9)
    for socket in sockets {
        done.enter()
        let thread = Thread {
            let seen = socket.count(framesStartingWith: updatePrefix, expected: expected, until: end)
            let t = now()
            counts.withLock { $0.append(seen) }
            finished.withLock { $0 = max($0, t) }
            done.leave()
        }
        thread.start()
    }
    try sockets[0].sendText(#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"\#(sessionID)","prompt":[{"type":"text","text":"flood"}]}}"#)
    done.wait()
    for socket in sockets { socket.sendClose() }
    let seconds = Double(finished.withLock { $0 } - start) / 1e9
    let each = counts.withLock { $0 }
    let total = each.reduce(0, +)
    // A client the bridge cut off (10,000 frames queued for it) ends short: min_per_client shows it.
    emit(["clients": clients, "updates": total, "per_client": total / clients, "min_per_client": each.min() ?? 0,
          "seconds": seconds, "updates_per_s": Double(total / clients) / max(seconds, 1e-9)])
}

/// Latency: like relay, with an agent that paces its updates and stamps each with its send time (flood_agent.py with
/// FLOOD_RATE); every client measures, for every update, the time from the agent's stamp to reading the frame.
func runLatency(_ args: Args) throws {
    _ = raiseFileLimit(args.int("nofile", 65536))
    let url = args.string("url", "ws://127.0.0.1:9099/")
    let clients = max(args.int("clients", 10), 1)
    let expected = args.int("count", 500)
    let timeout = min(args.double("timeout", 60), 120)
    let cwd = args.string("cwd", FileManager.default.currentDirectoryPath)
    let (sockets, sessionID) = try relaySetup(url: url, clients: clients, cwd: cwd)
    let all = Cell<[[UInt32]]>([])
    let done = DispatchGroup()
    let end = now() + UInt64(timeout * 1e9)
    for socket in sockets {
        done.enter()
        let thread = Thread {
            let seen = socket.latencies(framesStartingWith: updatePrefix, expected: expected, until: end)
            all.withLock { $0.append(seen) }
            done.leave()
        }
        thread.start()
    }
    try sockets[0].sendText(#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"\#(sessionID)","prompt":[{"type":"text","text":"paced"}]}}"#)
    done.wait()
    for socket in sockets { socket.sendClose() }
    let each = all.withLock { $0 }
    let sorted = each.flatMap { $0 }.sorted()
    func pct(_ p: Double) -> Double { sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000 }
    emit(["clients": clients, "updates": sorted.count, "min_per_client": each.map(\.count).min() ?? 0,
          "p50_ms": pct(0.5), "p90_ms": pct(0.9), "p99_ms": pct(0.99), "max_ms": Double(sorted.last ?? 0) / 1000])
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: bench echo|nioecho|bridge|load|idle|reconnect|relay|sserelay|sseload|latency|parse|tlscontext [--key value]...\n".utf8))
    exit(2)
}
let args = Args(arguments.dropFirst(2))
switch arguments[1] {
case "echo": try await runEcho(args)
case "nioecho": try await runNIOEcho(args)
case "bridge": try await runBridge(args)
case "load": try await runLoad(args)
case "idle": try await runIdle(args)
case "reconnect": try await runReconnect(args)
case "relay": try runRelay(args)
case "sserelay": try runSSERelay(args)
case "sseload": try runSSELoad(args)
case "latency": try runLatency(args)
case "parse": runParse(args)
case "dpop": try await runDPoP(args)
case "tlscontext": try runTLSContextCost(args)
default:
    FileHandle.standardError.write(Data("unknown mode \(arguments[1])\n".utf8))
    exit(2)
}
