// Issue 30: what DPoP costs a WebSocket connect. Against a running `oa-bridge serve --dpop optional` on loopback
// (its pairing routes), pairs two devices per client, one with a DPoP proof (bound; one key per client, as each
// phone has its own, and the bridge keeps at most 4,096 proof ids per key for 3 minutes) and one without
// (unbound), then alternates
// closed-loop reconnect runs (connect, upgrade, `initialize`, its answer, close) with the unbound device's
// `Authorization: Bearer` and with the bound device's `Authorization: DPoP` + a proof per connection, side by side on
// the same bridge. The proofs are made before each run (not timed), so the difference is the bridge's check.

import BridgeDPoP
import Foundation
import HTTPTypes
import HummingbirdWSClient
import NIOWebSocket
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `bench dpop --url ws://127.0.0.1:PORT/ [--clients 8] [--seconds 3] [--rounds 3]`.
func runDPoPConnects(_ args: Args, url: String) async throws {
    let clients = max(min(args.int("clients", 8), 64), 1)
    let seconds = min(max(args.double("seconds", 3), 0.5), 30)
    let rounds = min(max(args.int("rounds", 3), 1), 10)
    guard let ws = URL(string: url), let host = ws.host, let port = ws.port else { throw BenchDPoPError.badURL(url) }
    let base = "\(ws.scheme == "wss" ? "https" : "http")://\(host):\(port)"
    var devices: [DPoPSigner] = []
    var bound: [String] = []
    var unbound: [String] = []
    for _ in 0..<clients {
        let device = DPoPSigner()
        devices.append(device)
        bound.append(try await benchPair(base: base, signer: device))
        unbound.append(try await benchPair(base: base, signer: nil))
    }
    let unboundTokens = unbound
    var bearerRates: [Double] = []
    var dpopRates: [Double] = []
    var errors = 0
    for _ in 0..<rounds {
        let plain = try await timedConnects(url: url, clients: clients, seconds: seconds) { client, _ in
            ["Authorization": "Bearer \(unboundTokens[client])"]
        }
        bearerRates.append(plain.rate)
        let nonce = try await benchNonce(base: base)
        // Per client, enough proofs for twice the rate just seen; each used once.
        let budget = Int((max(plain.rate, 500) * seconds * 2 / Double(clients)).rounded(.up))
        var proofs: [[String]] = []
        for client in 0..<clients {
            var own: [String] = []
            own.reserveCapacity(budget)
            for _ in 0..<budget {
                own.append(try await devices[client].proof(method: "GET", uri: "\(base)/", accessToken: bound[client], nonce: nonce))
            }
            proofs.append(own)
        }
        let pool = proofs
        let tokens = bound
        let dpop = try await timedConnects(url: url, clients: clients, seconds: seconds, limit: budget) { client, index in
            ["Authorization": "DPoP \(tokens[client])", "DPoP": pool[client][index]]
        }
        dpopRates.append(dpop.rate)
        errors += plain.errors + dpop.errors
    }
    let bearer = bearerRates.sorted()[bearerRates.count / 2]
    let dpop = dpopRates.sorted()[dpopRates.count / 2]
    emit([
        "clients": clients, "seconds": seconds, "rounds": rounds, "errors": errors,
        "bearer_per_s": bearer, "dpop_per_s": dpop, "dpop_over_bearer": bearer > 0 ? dpop / bearer : 0,
        "bearer_runs": bearerRates, "dpop_runs": dpopRates,
    ])
}

/// The connections started, made and failed, shared by the client loops.
private final class ConnectCounter: Sendable {
    struct State {
        var done = 0
        var errors = 0
    }
    let state = Mutex(State())
}

enum BenchDPoPError: Error {
    case badURL(String)
    case pairing(String)
}

/// Connections per second over `seconds` with `clients` closed loops (each at most `limit` connections);
/// `headers(client, n)` gives the fields of that client's n-th connection.
private func timedConnects(
    url: String, clients: Int, seconds: Double, limit: Int = Int.max,
    headers: @escaping @Sendable (Int, Int) -> [String: String]
) async throws -> (rate: Double, errors: Int) {
    let counter = ConnectCounter()
    let start = now()
    let end = start + UInt64(seconds * 1e9)
    await withTaskGroup(of: Void.self) { group in
        for client in 0..<clients {
            group.addTask {
                for index in 0..<min(limit, 1_000_000) {
                    guard now() < end else { return }
                    do {
                        try await connectOnce(url: url, headers: headers(client, index))
                        counter.state.withLock { $0.done += 1 }
                    } catch {
                        counter.state.withLock { $0.errors += 1 }
                    }
                }
            }
        }
    }
    let elapsed = Double(now() - start) / 1e9
    let state = counter.state.withLock { $0 }
    return (Double(state.done) / elapsed, state.errors)
}

private func connectOnce(url: String, headers: [String: String]) async throws {
    var configuration = benchClientConfiguration(url)
    for (name, value) in headers {
        if let field = HTTPField.Name(name) { configuration.additionalHeaders[field] = value }
    }
    try await WebSocketClient.connect(
        url: url, configuration: configuration, tlsConfiguration: benchTLS(url), logger: benchLogger
    ) { inbound, outbound, _ in
        var iterator = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
        try await outbound.write(.text(initializeFrame))
        _ = try await iterator.next()
        try await outbound.close(.normalClosure, reason: nil)
    }
}

private func benchNonce(base: String) async throws -> String {
    guard let url = URL(string: "\(base)/api/pair/hello") else { throw BenchDPoPError.badURL(base) }
    let (_, response) = try await URLSession.shared.data(from: url)
    guard let nonce = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "DPoP-Nonce") else {
        throw BenchDPoPError.pairing("no DPoP-Nonce from /api/pair/hello: is the bridge running with --dpop optional?")
    }
    return nonce
}

/// Pairs a device over the loopback pairing routes; with `signer`, bound to its key.
///
/// Returns the access token.
private func benchPair(base: String, signer: DPoPSigner?) async throws -> String {
    func post(_ path: String, _ body: [String: String], headers: [String: String] = [:]) async throws -> [String: Any] {
        guard let url = URL(string: base + path) else { throw BenchDPoPError.badURL(base) }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        let (data, _) = try await URLSession.shared.data(for: request)
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }
    guard let code = try await post("/api/pair/refresh", [:])["token"] as? String else {
        throw BenchDPoPError.pairing("POST /api/pair/refresh gave no token (loopback only, auth on)")
    }
    var headers: [String: String] = [:]
    if let signer {
        headers["DPoP"] = try await signer.proof(method: "POST", uri: base + "/api/auth/exchange", nonce: try await benchNonce(base: base))
    }
    let tokens = try await post("/api/auth/exchange", ["pairing_token": code, "device_name": "bench"], headers: headers)
    guard let access = tokens["access_token"] as? String else { throw BenchDPoPError.pairing("exchange refused: \(tokens)") }
    return access
}
