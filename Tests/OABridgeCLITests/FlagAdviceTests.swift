import BridgePairing
import BridgeServer
import Testing
@testable import oa_bridge

/// The libraries' errors say what is wrong; the command line adds the flag that changes it (issue 31 item 5).
@Suite("the command line names the flag for a library error", .tags(.unit))
struct FlagAdviceTests {
    @Test("a taken or privileged port names --port, a bad directory its flag, a storage failure --state-dir")
    func flags() {
        let errors: [(any Error, String)] = [
            (BridgeServerError.portInUse(host: "::", port: 9099), "--port"),
            (BridgeServerError.portNotPermitted(host: "::", port: 80), "--port"),
            (BridgeServerError.bindFailed(host: "192.0.2.1", port: 9099, reason: "x"), "--host"),
            (BridgeServerError.badWorkingDirectory("/nowhere"), "--working-directory"),
            (BridgeServerError.badFileScopeDirectory(scope: "home", directory: nil), "--fs-scope"),
            (PairingError.storage(PairingStorageFailure(.createDirectory, path: "/x", cause: .notADirectory)), "--state-dir"),
        ]
        for (error, flag) in errors {
            #expect(!"\(error)".contains(flag), "the library's own words name \(flag): \(error)")
            #expect(FlagAdvice.advice(for: error)?.contains(flag) == true, "no \(flag) for \(error)")
        }
        #expect(FlagAdvice.advice(for: PairingError.missingToken) == nil)
        #expect(FlagAdvice.advice(for: BridgeServerError.badNetwork("x")) == nil)
    }
}
