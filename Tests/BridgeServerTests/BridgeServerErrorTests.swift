import BridgePairing
import Foundation
import NIOCore
import Testing
@testable import BridgeServer
#if canImport(Glibc)
import Glibc
#endif

/// Bind failures are told apart by their errno (issue 10 item 4), never by the text of an error.
@Suite("Bind failures by errno", .tags(.loopback))
struct BridgeServerErrorTests {
    @Test("EADDRINUSE, EACCES and others map to what the user should do")
    func byErrno() throws {
        let inUse = BridgeServer.explain(IOError(errnoCode: EADDRINUSE, reason: "bind"), host: "::", port: 9099, holder: { _ in nil })
        #expect(inUse as? BridgeServerError == .portInUse(host: "::", port: 9099))
        let denied = BridgeServer.explain(IOError(errnoCode: EACCES, reason: "bind"), host: "::", port: 80)
        #expect(denied as? BridgeServerError == .portNotPermitted(host: "::", port: 80))
        let other = BridgeServer.explain(IOError(errnoCode: EADDRNOTAVAIL, reason: "bind"), host: "192.0.2.1", port: 9099)
        #expect(other as? BridgeServerError == .bindFailed(host: "192.0.2.1", port: 9099, reason: String(cString: strerror(EADDRNOTAVAIL))))
    }

    @Test("an error that only mentions a bind problem in its text is passed on as it is")
    func notByText() {
        let storage = PairingError.storage(
            PairingStorageFailure(.open, path: "/var/lib/oa-bridge/pairing.sqlite", cause: .other("Permission denied (errno: 13)")))
        #expect(BridgeServer.explain(storage, host: "::", port: 9099) as? PairingError == storage)
        let busy = PairingError.storage(PairingStorageFailure(
            .write, path: "/state/pairing.sqlite", cause: .other("Address already in use (errno: 98) in a bind( call of another library")))
        #expect(BridgeServer.explain(busy, host: "::", port: 9099) as? PairingError == busy)
    }
}
