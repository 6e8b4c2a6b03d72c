import BridgeDPoP
import Crypto
import Foundation
import Testing

/// The pieces that make a proof check cheap (issue 30): the proof decoded once, keys checked once per key (bounded),
/// request URIs normalised once (bounded), base64url without string search and replace.
///
/// Each must refuse what the slower path refused.
@Suite("DPoP check parts: one decode, cached keys and URIs, base64url", .tags(.unit))
struct DPoPCheckPartsTests {
    let device = DPoPSigner()
    let now = Date(timeIntervalSince1970: 1_790_000_000)
    let url = "https://desk.local:9099/acp"

    @Test("base64url: RFC 4648 §5 both ways, no padding; padded text and the base64 alphabet's + and / are refused")
    func base64url() {
        let bytes = Data((0..<256).map { UInt8($0) })
        let encoded = bytes.base64URLEncodedString()
        #expect(!encoded.contains("=") && !encoded.contains("+") && !encoded.contains("/"))
        #expect(encoded.contains("-") && encoded.contains("_"))
        #expect(Data(base64URLEncoded: encoded) == bytes)
        #expect(Data([0xfb, 0xff]).base64URLEncodedString() == "-_8")
        #expect(Data(base64URLEncoded: "-_8") == Data([0xfb, 0xff]))
        #expect(Data(base64URLEncoded: "+/8") == nil)
        #expect(Data(base64URLEncoded: "-_8=") == nil)
        #expect(Data(base64URLEncoded: "a") == nil)
        #expect(Data(base64URLEncoded: "") == Data())
    }

    @Test("a proof is taken apart once: claims, and the signature checks against the signing input as sent")
    func parts() async throws {
        let proof = try await device.proof(method: "GET", uri: url, accessToken: "tok", nonce: "n1", now: now, jti: "j1")
        let parts = try DPoPProofParts(proof)
        #expect(parts.claims == DPoPProofClaims(htm: "GET", htu: url, iat: Int64(now.timeIntervalSince1970), jti: "j1",
                                               ath: dpopAccessTokenHash("tok"), nonce: "n1"))
        let key = try parts.key(from: DPoPKeyCache())
        #expect(key.key == device.publicKey)
        #expect(parts.isSigned(by: key.verifying))
        #expect(!parts.isSigned(by: DPoPSigner().privateKey.publicKey))
        for bad in ["a.b", "a.b.c.d", "..", "e30.e30.", proof + "."] {
            #expect(throws: DPoPError.self) { try DPoPProofParts(bad) }
        }
    }

    @Test("the key cache checks a key once, keeps at most its capacity, and never keeps what is not a P-256 point")
    func keyCache() throws {
        let cache = DPoPKeyCache(capacity: 2)
        let keys = (0..<3).map { _ in DPoPSigner().publicKey }
        let first = try cache.key(x: keys[0].x, y: keys[0].y)
        #expect(first.key.thumbprint == keys[0].thumbprint)
        #expect(try cache.key(x: keys[0].x, y: keys[0].y).key == keys[0])
        #expect(cache.count == 1)
        _ = try cache.key(x: keys[1].x, y: keys[1].y)
        _ = try cache.key(x: keys[2].x, y: keys[2].y)
        #expect(cache.count == 2)
        // Not on the curve (y of another key), and not 32 bytes: refused each time, never kept.
        #expect(throws: DPoPError.self) { try cache.key(x: keys[0].x, y: keys[1].y) }
        #expect(throws: DPoPError.self) { try cache.key(x: "AAAA", y: keys[1].y) }
        #expect(cache.count == 2)
    }

    @Test("request URIs are normalised once and the memo is bounded; the check still compares htu after normalisation")
    func targetMemo() async throws {
        let memo = DPoPTargetURI.Memo(capacity: 2)
        #expect(memo.normalized("wss://Desk.Local:443/a/../acp")?.normalized == "https://desk.local/acp")
        #expect(memo.normalized("not a uri") == nil)
        _ = memo.normalized("http://a/")
        _ = memo.normalized("http://b/")
        #expect(memo.normalized("http://c/")?.normalized == "http://c/")

        let verifier = DPoPVerifier(nonces: nil)
        let request = DPoPRequest(method: "GET", uri: "https://desk.local:9099/acp")
        // The same text, another spelling of it, and (twice, from the memo) another URI.
        _ = try await verifier.check(try await device.proof(method: "GET", uri: request.uri, now: now), for: request, now: now)
        _ = try await verifier.check(
            try await device.proof(method: "GET", uri: "wss://DESK.local:9099/./acp", now: now), for: request, now: now)
        for _ in 0..<2 {
            await #expect(throws: DPoPError.self) {
                try await verifier.check(
                    try await device.proof(method: "GET", uri: "https://desk.local:9099/api", now: now), for: request, now: now)
            }
        }
    }

    @Test("nonces are the same across calls within a period and change with it")
    func nonceMemo() {
        let source = DPoPNonceSource(lifetime: .seconds(300))
        let first = source.current(at: now)
        #expect(source.current(at: now.addingTimeInterval(1)) == first)
        let next = source.current(at: now.addingTimeInterval(300))
        #expect(next != first)
        #expect(source.isValid(first, at: now.addingTimeInterval(300)))
        #expect(!source.isValid(first, at: now.addingTimeInterval(600)))
        #expect(source.isValid(first, at: now))
    }
}
