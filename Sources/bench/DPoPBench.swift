import BridgeDPoP
import CoreFoundation
import Foundation

/// `bench dpop [--count N]`: the CPU one DPoP proof check costs the bridge (issue 30's goal: at most 0.2 ms), in
/// process: proofs made beforehand by a device key (not timed), then both of the bridge's steps (`check`: parse,
/// ES256 signature, claims, nonce, ath; `accept`: binding and replay cache) per proof, best of 3 rounds.
///
/// Also the device's side, making one proof, for the record.
///
/// With `--url ws://127.0.0.1:PORT/`: WebSocket connects per second with and without DPoP against that bridge
/// (``runDPoPConnects(_:url:)``). With `--stages 1`: the check's stages timed apart (``runDPoPStages(_:)``).
func runDPoP(_ args: Args) async throws {
    let target = args.string("url", "")
    if !target.isEmpty { return try await runDPoPConnects(args, url: target) }
    if args.int("stages", 0) == 1 { return try await runDPoPStages(args) }
    let count = min(max(args.int("count", 2_000), 1), 50_000)
    let device = DPoPSigner()
    let url = "https://desk.local:9099/"
    let token = "access-token-for-the-benchmark"
    let issued = Date()
    var best = Double.infinity
    var cpuBest = Double.infinity
    var signBest = Double.infinity
    for _ in 0..<3 {
        let nonces = DPoPNonceSource()
        let verifier = DPoPVerifier(nonces: nonces)
        let nonce = nonces.current(at: issued)
        let signStart = ContinuousClock.now
        var proofs: [String] = []
        proofs.reserveCapacity(count)
        for n in 0..<count {
            proofs.append(try await device.proof(method: "GET", uri: url, accessToken: token, nonce: nonce, now: issued,
                                                 jti: "bench-\(n)"))
        }
        signBest = min(signBest, seconds(ContinuousClock.now - signStart))
        let request = DPoPRequest(method: "GET", uri: url, accessToken: token)
        let start = ContinuousClock.now
        let cpuStart = dpopCPUSeconds()
        for proof in proofs {
            let checked = try await verifier.check(proof, for: request, now: issued)
            try verifier.accept(checked, boundTo: device.publicKey.thumbprint, now: issued)
        }
        best = min(best, seconds(ContinuousClock.now - start))
        cpuBest = min(cpuBest, dpopCPUSeconds() - cpuStart)
    }
    // Wall time suffers from other processes on a busy machine; the process's CPU time (it runs nothing else then)
    // much less.
    emit([
        "proofs": count, "us_per_check": best / Double(count) * 1e6, "cpu_us_per_check": cpuBest / Double(count) * 1e6,
        "us_per_proof_made": signBest / Double(count) * 1e6,
    ])
}

private func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// CPU seconds this process has used (every thread; C's `clock()`, microseconds on glibc).
private func dpopCPUSeconds() -> Double {
    Double(clock()) / Double(CLOCKS_PER_SEC)
}

/// `bench dpop --stages 1 [--count N]`: where a proof check's CPU goes, each stage run `count` times on its own over the
/// same proofs (best of 3 rounds, CPU µs per proof): decoding the compact JWS (base64url, header and claims JSON), the
/// key from a warm cache and checked anew (base64url coordinates, on-curve check, RFC 7638 thumbprint), the ES256
/// signature (swift-crypto), the request URI (memo and equal text; and two full normalisations, as before), `ath`, the
/// nonce, the replay cache, and the whole `check` + `accept`.
func runDPoPStages(_ args: Args) async throws {
    let count = min(max(args.int("count", 2_000), 1), 50_000)
    let device = DPoPSigner()
    let url = "https://desk.local:9099/"
    let token = "access-token-for-the-benchmark"
    let issued = Date()
    let nonces = DPoPNonceSource()
    let nonce = nonces.current(at: issued)
    var proofs: [String] = []
    for n in 0..<count {
        proofs.append(try await device.proof(method: "GET", uri: url, accessToken: token, nonce: nonce, now: issued, jti: "bench-\(n)"))
    }
    let parts = try proofs.map { proof throws(DPoPError) in try DPoPProofParts(proof) }
    let warm = DPoPKeyCache()
    let key = try parts[0].key(from: warm)
    let memo = DPoPTargetURI.Memo()
    var stages: [String: Double] = [:]
    func stage(_ name: String, _ body: (Int) throws -> Void) rethrows {
        var best = Double.infinity
        for _ in 0..<3 {
            let start = dpopCPUSeconds()
            for index in 0..<count { try body(index) }
            best = min(best, dpopCPUSeconds() - start)
        }
        stages[name] = best / Double(count) * 1e6
    }
    var sink = 0
    try stage("parse") { index in sink &+= try DPoPProofParts(proofs[index]).claims.jti.count }
    try stage("key_cached") { index in sink &+= try parts[index].key(from: warm).key.x.count }
    try stage("key_uncached") { index in sink &+= try parts[index].key(from: DPoPKeyCache()).key.thumbprint.count }
    stage("signature") { index in sink &+= parts[index].isSigned(by: key.verifying) ? 1 : 0 }
    stage("uri_memo") { index in
        sink &+= memo.normalized(url) != nil && parts[index].claims.htu == url ? 1 : 0
    }
    stage("uri_normalised_twice") { index in
        sink &+= DPoPTargetURI(url) == DPoPTargetURI(parts[index].claims.htu) ? 1 : 0
    }
    stage("ath") { _ in sink &+= dpopAccessTokenHash(token).count }
    stage("nonce") { _ in sink &+= nonces.isValid(nonce, at: issued) ? 1 : 0 }
    var round = 0
    let replay = DPoPReplayCache(retention: .seconds(180), perKey: 4 * count)
    try stage("replay_cache") { index in
        if index == 0 { round += 1 }
        try replay.record(jti: "r\(round)-\(index)", thumbprint: key.key.thumbprint, issuedAt: issued, now: issued)
    }
    var whole = Double.infinity
    for _ in 0..<3 {
        let verifier = DPoPVerifier(nonces: nonces)
        let request = DPoPRequest(method: "GET", uri: url, accessToken: token)
        let start = dpopCPUSeconds()
        for proof in proofs {
            let checked = try await verifier.check(proof, for: request, now: issued)
            try verifier.accept(checked, boundTo: device.publicKey.thumbprint, now: issued)
        }
        whole = min(whole, dpopCPUSeconds() - start)
    }
    stages["check_and_accept"] = whole / Double(count) * 1e6
    emit(["proofs": count, "cpu_us": stages, "sink": sink])
}
