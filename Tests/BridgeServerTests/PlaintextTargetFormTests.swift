import BridgePairing
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
@testable import BridgeHTTP
@testable import BridgeServer

/// Issue 27 item 10: the clear-text policy judges the normalised path of every request-target form, so that no
/// spelling of `/api/auth/*` (absolute form with a bad port, empty or dot segments, escapes) slips past it from the LAN.
@Suite("PlaintextPolicy on every target form", .tags(.unit))
struct PlaintextTargetFormTests {
    static let targets: [String] = [
        "http://x:abc//api/auth/exchange", "http://desk:9099/api/auth/exchange", "https://x/api/auth/refresh",
        "//api/auth/exchange", "/./api/auth/exchange", "/%61pi/auth/exchange", "/api/../api/auth/exchange",
        "/api//auth/exchange", "/x/../api/auth/refresh?y=1", "/%2e/api/auth/exchange", "HTTP://X:1//API/auth/exchange",
    ]

    @Test("from the LAN in clear, every spelling of /api/auth/* is refused", arguments: targets)
    func spellings(target: String) {
        let request = PlaintextPolicy.Request(
            path: target, hasAuthorization: false, isUpgrade: false, remoteAddress: "192.168.1.30", isTLS: false)
        #expect(PlaintextPolicy().refuses(request), "\(target) passed the clear-text policy")
    }

    @Test("the normalised path of a target", arguments: [
        ("http://x:abc//api/auth/exchange", "/api/auth/exchange"), ("/a/./b/../c?q=/api/auth", "/a/c"),
        ("*", "*"), ("/%61pi//status/", "/api/status"), ("http://host", "/"),
    ])
    func normalised(target: String, path: String) {
        #expect(PlaintextPolicy.normalizedPath(ofTarget: target) == path)
    }

    @Test("what carries no secret still passes, in any spelling")
    func passes() {
        for target in ["http://x:abc//api/health", "//pair", "/api/status", "http://x/app/"] {
            let request = PlaintextPolicy.Request(
                path: target, hasAuthorization: false, isUpgrade: false, remoteAddress: "192.168.1.30", isTLS: false)
            #expect(!PlaintextPolicy().refuses(request), "\(target)")
        }
    }
}
