import BridgeDPoP
import CoreFoundation
import Foundation

/// `bench dpop [--count N]`: the CPU one DPoP proof check costs the bridge (issue 30's goal: at most 0.2 ms), in
/// process: proofs made beforehand by a device key (not timed), then both of the bridge's steps (`check`: parse,
/// ES256 signature, claims, nonce, ath; `accept`: binding and replay cache) per proof, best of 3 rounds. Also the
/// device's side, making one proof, for the record.
///
/// With `--url ws://127.0.0.1:PORT/`: WebSocket connects per second with and without DPoP against that bridge
/// (``runDPoPConnects(_:url:)``).
func runDPoP(_ args: Args) async throws {
    let target = args.string("url", "")
    if !target.isEmpty { return try await runDPoPConnects(args, url: target) }
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
        let cpuStart = processCPUSeconds()
        for proof in proofs {
            let checked = try await verifier.check(proof, for: request, now: issued)
            try verifier.accept(checked, boundTo: device.publicKey.thumbprint, now: issued)
        }
        best = min(best, seconds(ContinuousClock.now - start))
        cpuBest = min(cpuBest, processCPUSeconds() - cpuStart)
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

/// CPU seconds this process has used (every thread).
private func processCPUSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}
