import BridgeTLS
import BridgeTestKit
import Foundation
import Logging
import Synchronization
import Testing
@testable import BridgeClient
#if canImport(Glibc)
import Glibc
#endif

/// A TLS server that is not the bridge: `openssl s_server -www` with a certificate that names only
/// `elsewhere.example` (no IP address at all), as a bridge's certificate names none of a link-local `fe80::…%eth0`.
///
/// A pinned client must take it by its key; before the fix every such address failed with `failedToValidateHostname`.
private final class OpenSSLServer: Sendable {
    let process: Process
    /// The server's output, open while it runs (what it writes after it listens stays unread: a few lines).
    let output: Pipe
    let port: Int
    let directory: URL

    /// Starts `openssl s_server` on `host` (an IP literal) and a port the kernel picks; returns once it listens.
    init(host: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("oa-client-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = directory.appendingPathComponent("key.pem").path
        let cert = directory.appendingPathComponent("cert.pem").path
        let request = Process()
        request.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        request.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                             "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=elsewhere.example",
                             "-addext", "subjectAltName=DNS:elsewhere.example"]
        request.standardError = FileHandle.nullDevice
        try request.run()
        request.waitUntilExit()
        // "ACCEPT [::1]:35485" on its output once it listens: read as it comes (this runs on a thread of its own),
        // bounded by a watchdog that kills a server still silent after 10 s (its output then ends).
        output = Pipe()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        let accept = host.contains(":") ? "[\(host)]:0" : "\(host):0"
        process.arguments = ["s_server", "-accept", accept, "-cert", cert, "-key", key, "-www"]
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try? output.fileHandleForWriting.close()
        let listening = ListeningFlag()
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + 10) {
            if !listening.value.withLock({ $0 }) { kill(pid, SIGKILL) }
        }
        var seen = ""
        var found: Int?
        while found == nil {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }  // it exited (or the watchdog killed it)
            seen += String(decoding: data, as: UTF8.self)
            if let line = seen.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT") }),
               let colon = line.lastIndex(of: ":") {
                found = Int(line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
        }
        listening.value.withLock { $0 = found != nil }
        guard let found else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "openssl s_server did not listen: \(seen)"])
        }
        port = found
    }

    func stop() {
        // SIGKILL: a child of the test process starts with its blocked signal mask, and SIGTERM would wait for ever.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// ``stop()`` with its wait on a thread of its own (the wait must not hold one of the few threads every task runs
    /// on); the kill is sent at once, so a server never outlives a test process that ends before that thread runs.
    func stopSoon() {
        kill(process.processIdentifier, SIGKILL)
        Thread { self.stop() }.start()
    }
}

/// Whether the server listened: what its watchdog looks at.
private final class ListeningFlag: Sendable {
    let value = Mutex(false)
}

@Suite("Pinned TLS to an IP literal the certificate does not name", .tags(.loopback, .externalTool))
struct PinnedTLSTests {
    static let connector = WebSocketConnector(timeout: .seconds(10), logger: .init(label: "test"))

    @Test("trust on first use, then the pin: over IPv4 and IPv6 literals, no name check, the key decides",
          arguments: ["127.0.0.1", "::1"])
    func pinnedLiteral(host: String) async throws {
        let server = try await onOwnThread { try OpenSSLServer(host: host) }
        defer { server.stopSoon() }
        let url = host.contains(":") ? "https://[\(host)]:\(server.port)/" : "https://\(host):\(server.port)/"
        // First use: no pin; the answer says which key the server has.
        let first = try await PinnedTLSTests.connector.request("GET", url: url)
        #expect(first.status == 200)
        let pin = try #require(first.certificatePin)
        // Pinned: accepted by its key although the certificate names neither the address nor anything we asked for.
        let pinned = try await PinnedTLSTests.connector.request("GET", url: url, pin: pin)
        #expect(pinned.status == 200 && pinned.certificatePin == pin)
    }

    @Test("another key than the pinned one is still refused, as a pin mismatch")
    func wrongPin() async throws {
        let server = try await onOwnThread { try OpenSSLServer(host: "127.0.0.1") }
        defer { server.stopSoon() }
        let other = try CertificatePin(parsing: "sha256/" + Data(repeating: 7, count: 32).base64EncodedString())
        do {
            _ = try await PinnedTLSTests.connector.request("GET", url: "https://127.0.0.1:\(server.port)/", pin: other)
            Issue.record("a certificate with another key was accepted")
        } catch let error as WebSocketConnectorError {
            guard case .pinMismatch(let expected, _) = error else {
                Issue.record("expected a pin mismatch, got \(error)")
                return
            }
            #expect(expected == other)
            #expect(!error.description.contains("same network"))
        }
    }

    @Test("a certificate refused after the handshake began is a certificate problem, never 'check the network'")
    func certificateProblemWording() {
        let error = WebSocketConnectorError.certificateRejected(address: "[fe80::1%eth0]:9099", pin: nil, reason: "bad")
        #expect(error.description.contains("certificate"))
        #expect(!error.description.contains("network"))
        #expect(ProbeOutcome(error) == .tlsMismatch)
    }
}
