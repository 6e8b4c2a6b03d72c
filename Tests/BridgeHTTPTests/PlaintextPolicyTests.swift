import BridgeHTTP
import Testing

@Suite("PlaintextPolicy", .tags(.unit))
struct PlaintextPolicyTests {
    let policy = PlaintextPolicy()

    private func request(
        _ path: String, query: String? = nil, authorization: Bool = false, upgrade: Bool = false,
        from remote: String? = "192.168.1.30", tls: Bool = false
    ) -> PlaintextPolicy.Request {
        PlaintextPolicy.Request(
            path: path, query: query, hasAuthorization: authorization, isUpgrade: upgrade, remoteAddress: remote, isTLS: tls)
    }

    @Test("From the LAN in clear: pairing, refresh, and tokens on /api or on an upgrade are refused")
    func refusesSecretsInClear() {
        #expect(policy.refuses(request("/api/auth/exchange")))
        #expect(policy.refuses(request("/api/auth/refresh")))
        #expect(policy.refuses(request("/api/status", authorization: true)))
        #expect(policy.refuses(request("/api/me", query: "x=1&token=oa_s_abc")))
        #expect(policy.refuses(request("/", authorization: true, upgrade: true)))
        #expect(policy.refuses(request("/", query: "token=oa_s_abc", upgrade: true)))
        #expect(policy.refuses(request("/", authorization: true, upgrade: true, from: "::ffff:10.0.0.5")))
        #expect(policy.refuses(request("/", authorization: true, upgrade: true, from: nil)))
    }

    @Test("From the LAN in clear: what carries no secret passes")
    func passesWhatCarriesNothing() {
        #expect(!policy.refuses(request("/api/health")))
        #expect(!policy.refuses(request("/api/status")))
        #expect(!policy.refuses(request("/api/me", query: "tokens=1")))
        #expect(!policy.refuses(request("/pair")))
        // An upgrade without a token cannot drive the agent: the token check answers it (401).
        #expect(!policy.refuses(request("/", upgrade: true)))
    }

    @Test("TLS, loopback, --allow-plaintext and --auth none pass everything")
    func exemptions() {
        let secret = request("/api/auth/exchange")
        #expect(!policy.refuses(request("/api/auth/exchange", tls: true)))
        #expect(!policy.refuses(request("/", authorization: true, upgrade: true, tls: true)))
        for loopback in ["127.0.0.1", "127.8.0.1", "::1", "::ffff:127.0.0.1"] {
            #expect(!policy.refuses(request("/api/auth/exchange", from: loopback)), "\(loopback)")
            #expect(!policy.refuses(request("/", authorization: true, upgrade: true, from: loopback)), "\(loopback)")
        }
        #expect(!PlaintextPolicy(allowPlaintext: true).refuses(secret))
        #expect(!PlaintextPolicy(tokensInUse: false).refuses(request("/", authorization: true, upgrade: true)))
    }
}
