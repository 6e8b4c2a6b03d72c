import Foundation
import Testing
@testable import BridgeTailscale

#if canImport(Glibc)
import Glibc
#endif

@Suite("Tailscale identity from a fake LocalAPI and a fake CLI", .tags(.loopback))
struct TailscaleStatusTests {
    static let status = #"{"BackendState":"Running","Self":{"DNSName":"desk.tail1234.ts.net.","TailscaleIPs":["fd7a:115c:a1e0::1","100.101.102.103"]}}"#

    @Test("reads Self.DNSName and TailscaleIPs over the LocalAPI unix socket")
    func localAPI() async throws {
        let directory = try TemporaryDirectory()
        let socketPath = directory.path + "/tailscaled.sock"
        let server = try FakeLocalAPI(path: socketPath, response: "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + Self.status)
        defer { server.stop() }
        // A generous bound: the fake answers at once, but a loaded 2-core CI machine has stalled its thread past 2 s.
        let reader = TailscaleStatusReader(socketPaths: [socketPath], command: directory.path + "/no-such-tailscale", timeout: .seconds(20))
        let identity = try await reader.read()
        #expect(identity == TailnetIdentity(dnsName: "desk.tail1234.ts.net", addresses: ["100.101.102.103", "fd7a:115c:a1e0::1"], backendState: "Running", source: "localapi"))
        #expect(identity.isRunning)
        #expect(server.requests.first?.hasPrefix("GET /localapi/v0/status HTTP/1.0") == true)
    }

    @Test("falls back to 'tailscale status --json' when no socket answers")
    func commandFallback() async throws {
        let directory = try TemporaryDirectory()
        let script = directory.path + "/tailscale"
        try writeScript("#!/bin/sh\n[ \"$1 $2\" = \"status --json\" ] || exit 3\necho '\(Self.status.replacingOccurrences(of: "Running", with: "Stopped"))'\n", to: script)
        // The same generous bound as above: the clean-clone CI of 8e2d4b2 (a loaded machine) ran past the 2 s default.
        let reader = TailscaleStatusReader(
            socketPaths: [directory.path + "/absent.sock"], command: script, timeout: .seconds(20))
        let identity = try await reader.read()
        #expect(identity.dnsName == "desk.tail1234.ts.net")
        #expect(identity.source == "cli")
        #expect(!identity.isRunning)
    }

    @Test("no socket and no command means not installed, with a message that says so")
    func notInstalled() async throws {
        let directory = try TemporaryDirectory()
        let reader = TailscaleStatusReader(socketPaths: [directory.path + "/absent.sock"], command: directory.path + "/absent")
        await #expect(throws: TailscaleError.notInstalled) { try await reader.read() }
        #expect(TailscaleError.notInstalled.description.contains("not installed"))
    }

    @Test("a command that hangs is cut off at the timeout and reported as unreachable")
    func hangingCommand() async throws {
        let directory = try TemporaryDirectory()
        let script = directory.path + "/tailscale"
        try writeScript("#!/bin/sh\nexec sleep 30\n", to: script)
        let reader = TailscaleStatusReader(socketPaths: [], command: script, timeout: .milliseconds(300))
        let started = ContinuousClock.now
        do {
            _ = try await reader.read()
            Issue.record("a hanging command gave an identity")
        } catch {
            guard case .unreachable(let message) = error else {
                Issue.record("expected unreachable, got \(error)")
                return
            }
            #expect(message.contains("did not answer within"))
        }
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test("an HTTP error from the LocalAPI is reported, not parsed")
    func httpError() async throws {
        let directory = try TemporaryDirectory()
        let socketPath = directory.path + "/tailscaled.sock"
        let server = try FakeLocalAPI(path: socketPath, response: "HTTP/1.0 403 Forbidden\r\n\r\naccess denied")
        defer { server.stop() }
        let reader = TailscaleStatusReader(socketPaths: [socketPath], command: directory.path + "/absent")
        await #expect(throws: TailscaleError.self) { try await reader.read() }
    }
}

/// Writes an executable script through a close-on-exec descriptor.
///
/// A descriptor without it (Foundation's atomic write) is inherited by any process another test spawns meanwhile,
/// and while such a process holds it open running the script fails with ETXTBSY ("cannot run …", seen in a full
/// parallel `swift test`).
func writeScript(_ text: String, to path: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
    guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    guard written == bytes.count else { throw POSIXError(.EIO) }
}

/// A temporary directory removed on deinit.
final class TemporaryDirectory {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "oa-test-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A one-thread unix-socket server that answers every connection with a fixed response.
final class FakeLocalAPI: @unchecked Sendable {
    private let descriptor: Int32
    private let lock = NSLock()
    private var received: [String] = []
    private var thread: Thread?

    var requests: [String] { lock.withLock { received } }

    init(path: String, response: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(descriptor, 4) == 0 else { throw POSIXError(.EADDRINUSE) }
        let listener = descriptor
        let thread = Thread { [weak self] in
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                var buffer = [UInt8](repeating: 0, count: 4_096)
                let count = recv(client, &buffer, buffer.count, 0)
                if count > 0 { self?.record(String(decoding: buffer[0..<count], as: UTF8.self)) }
                _ = response.utf8CString.withUnsafeBufferPointer { send(client, $0.baseAddress, $0.count - 1, 0) }
                close(client)
            }
        }
        self.thread = thread
        thread.start()
    }

    private func record(_ request: String) { lock.withLock { received.append(request) } }

    func stop() {
        shutdown(descriptor, Int32(SHUT_RDWR))
        close(descriptor)
    }
}
