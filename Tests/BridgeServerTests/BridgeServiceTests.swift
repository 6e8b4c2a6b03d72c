import BridgeClient
import BridgeDiscovery
import BridgePairing
import BridgePairingWire
import BridgeServer
import BridgeTLS
import BridgeTailscale
import BridgeTestKit
import Foundation
import Logging
import Testing

@Suite("BridgeService: what serve starts, for an app embedding the library", .tags(.loopback))
struct BridgeServiceTests {
    /// Runs a service on 127.0.0.1, port 0, with its state in a fresh directory, until `body` returns.
    func withService<T: Sendable>(
        auth: BridgeService.Auth, logs: TestLog,
        _ body: @Sendable (_ service: BridgeService, _ port: Int, _ state: URL) async throws -> T
    ) async throws -> T {
        let state = URL(fileURLWithPath: try TestBridge.makeDirectory())
        var configuration = BridgeServerConfiguration(serverName: "Service Desk", workingDirectory: try TestBridge.makeDirectory())
        configuration.host = "127.0.0.1"
        configuration.port = 0
        var options = BridgeService.Options(configuration: configuration, stateDirectory: state)
        options.auth = auth
        options.version = "9.9.9"
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let service = try await BridgeService(options: options, logger: logs.logger(label: "test.service", level: .debug)) { listening in
            portSink.yield(listening.port)
        }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw TestClientError.closed }
            defer { group.cancelAll() }
            return try await body(service, port, state)
        }
    }

    @Test("token auth: install id, TLS identity and token store in the state directory; the QR payload carries the pin; /api/status needs a token")
    func tokenAuth() async throws {
        let logs = TestLog()
        try await withService(auth: .token(requireApproval: false), logs: logs) { service, port, state in
            let installID = try String(contentsOf: state.appendingPathComponent("install-id"), encoding: .utf8)
            #expect(installID.trimmingCharacters(in: .whitespacesAndNewlines) == service.installID)
            #expect(try BridgeIdentity.storedPin(in: state) == service.identity.pin)
            #expect(service.configuration.tlsIdentity?.pin == service.identity.pin)
            #expect(service.configuration.authenticator != nil && service.configuration.pairing != nil)
            let payload = try await service.pairing.payload()
            #expect(payload.pin == service.identity.pin.description && payload.name == "Service Desk")
            #expect(try await LoopbackHTTP.request(port: port, "GET", "/api/health").status == 200)
            #expect(try await LoopbackHTTP.request(port: port, "GET", "/api/status").status == 401)
            #expect(await logs.waitFor("made this bridge's TLS identity (phones get its pin in the QR code)"))
            #expect(logs.count(of: "oa-bridge 9.9.9 serving wss://127.0.0.1:\(port)/ and https://127.0.0.1:\(port)/app (ws:// and http:// from loopback only; agent: built-in demo agent, auth: token)") == 1)
            #expect(logs.count(of: "discovery is off in the bridge's settings: phones must connect by address") == 1)
        }
    }

    @Test("auth none: no token store, a warning, and the same install id and pin on the next start")
    func noAuth() async throws {
        let logs = TestLog()
        let (first, state) = try await withService(auth: .none, logs: logs) { service, port, state in
            #expect(service.configuration.authenticator == nil && service.configuration.authorizeUpgrade == nil)
            #expect(!FileManager.default.fileExists(atPath: state.appendingPathComponent("pairing.sqlite").path))
            #expect(logs.count(of: "oa-bridge 9.9.9 serving wss://127.0.0.1:\(port)/ and https://127.0.0.1:\(port)/app (ws:// and http:// too; agent: built-in demo agent, auth: none)") == 1)
            #expect(logs.count(of: "AUTHENTICATION IS OFF in the bridge's settings: any client on loopback can drive this desktop's agent without pairing") == 1)
            return (service.installID, state)
        }
        var configuration = BridgeServerConfiguration(serverName: "again", workingDirectory: try TestBridge.makeDirectory())
        configuration.port = 0
        var options = BridgeService.Options(configuration: configuration, stateDirectory: state)
        options.auth = .none
        let again = try await BridgeService(options: options, logger: Logger(label: "test.service"))
        #expect(again.installID == first)
        #expect(try BridgeIdentity.storedPin(in: state) == again.identity.pin)
    }

    @Test("a state directory that cannot be made is an InstallIdentityError, before anything listens")
    func unusableState() async throws {
        let file = try TestBridge.makeDirectory() + "/file"
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let options = BridgeService.Options(
            configuration: BridgeServerConfiguration(serverName: "x"), stateDirectory: URL(fileURLWithPath: file + "/state"))
        await #expect(throws: InstallIdentityError.self) {
            _ = try await BridgeService(options: options, logger: Logger(label: "test.service"))
        }
    }

    @Test("oa-bridge pair's LocalPairingCode: the payload over loopback, a new one with rotate, typed errors")
    func localPairingCode() async throws {
        try await withService(auth: .token(requireApproval: false), logs: TestLog()) { service, port, _ in
            let current = try await service.pairing.payload()
            let fetched = try await LocalPairingCode(port: port, timeout: TestBounds.notUnderTest).fetch()
            #expect(fetched.token == current.token && fetched.pin == service.identity.pin.description)
            let rotated = try await LocalPairingCode(port: port, timeout: TestBounds.notUnderTest).fetch(rotate: true)
            #expect(rotated.token != nil && rotated.token != current.token)
        }
        _ = try await TestBridge.with { port, _ in
            // A bridge without a pairing session answers /api/pair/info with an error status.
            await #expect {
                _ = try await LocalPairingCode(port: port, timeout: TestBounds.notUnderTest).fetch()
            } throws: { error in
                guard case .refused(port, let status, _) = error as? LocalPairingCodeError else { return false }
                return status != 200
            }
        }
        let closed = try await SilentServer.with { port, _ in port }
        await #expect {
            _ = try await LocalPairingCode(port: closed, timeout: .seconds(2)).fetch()
        } throws: { error in
            guard case .unreachable(let url, _) = error as? LocalPairingCodeError else { return false }
            return url == "http://127.0.0.1:\(closed)/api/pair/info"
        }
    }

    @Test("certificate names: the host name and routable addresses, no link-local ones, plus the tailnet's")
    func identityNames() {
        let names = BridgeService.identityNames(
            hostName: "desk", addresses: ["192.168.1.20", "fe80::1", "169.254.3.4", "fd00::5"],
            tailnet: TailnetIdentity(dnsName: "desk.tail1234.ts.net", addresses: ["100.64.0.1"], backendState: "Running", source: "test"))
        #expect(Array(names.dnsNames.prefix(3)) == ["desk", "desk.local", "desk.tail1234.ts.net"])
        #expect(names.ipAddresses.contains([192, 168, 1, 20]) && names.ipAddresses.contains([100, 64, 0, 1]))
        #expect(names.ipAddresses.contains([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5]))
        #expect(!names.ipAddresses.contains([169, 254, 3, 4]))
        #expect(!names.ipAddresses.contains { $0.count == 16 && $0[0] == 0xfe && $0[1] == 0x80 })
    }
}
