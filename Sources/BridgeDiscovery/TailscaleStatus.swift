import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// This machine's place on a Tailscale tailnet: the MagicDNS name and Tailscale IPs a phone can
/// use when multicast does not reach (guest Wi-Fi, VPN, another network entirely).
public struct TailnetIdentity: Sendable, Hashable, Codable {
    /// The MagicDNS name without the trailing dot, e.g. `desk.tail1234.ts.net`.
    public var dnsName: String
    /// Tailscale addresses, IPv4 (100.x) first.
    public var addresses: [String]
    /// tailscaled's backend state, e.g. `Running`, `Stopped`, `NeedsLogin`.
    public var backendState: String
    /// Where the answer came from: `localapi` or `cli`.
    public var source: String

    /// Whether the node is up and reachable on the tailnet.
    public var isRunning: Bool { backendState == "Running" }

    /// Creates an identity.
    public init(dnsName: String, addresses: [String], backendState: String, source: String) {
        self.dnsName = dnsName
        self.addresses = addresses
        self.backendState = backendState
        self.source = source
    }

    /// Reads tailscaled's `/localapi/v0/status` JSON (the same shape `tailscale status --json` prints).
    public init(statusJSON data: Data, source: String) throws(TailscaleError) {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw .badAnswer("the status is not a JSON object")
        }
        let state = object["BackendState"] as? String ?? "Unknown"
        guard let selfNode = object["Self"] as? [String: Any] else {
            throw .badAnswer("the status has no Self node (backend state \(state))")
        }
        var name = selfNode["DNSName"] as? String ?? ""
        while name.hasSuffix(".") { name.removeLast() }
        let ips = (selfNode["TailscaleIPs"] as? [String] ?? []).sorted { ($0.contains(":") ? 1 : 0) < ($1.contains(":") ? 1 : 0) }
        self.init(dnsName: name, addresses: ips, backendState: state, source: source)
    }
}

/// Why the tailnet identity could not be read.
public enum TailscaleError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Neither tailscaled's socket nor the `tailscale` command is there.
    case notInstalled
    /// tailscaled answered something unexpected.
    case badAnswer(String)
    /// Talking to tailscaled failed.
    case unreachable(String)

    public var description: String {
        switch self {
        case .notInstalled:
            return "Tailscale is not installed (no tailscaled socket, no 'tailscale' command); the Tailscale fallback is off"
        case .badAnswer(let message):
            return "tailscaled gave an unexpected answer: \(message)"
        case .unreachable(let message):
            return "cannot reach tailscaled: \(message). Is it running? ('sudo systemctl start tailscaled')"
        }
    }
}

/// Reads the tailnet identity: from tailscaled's LocalAPI over its unix socket, or failing that
/// from `tailscale status --json`.
public struct TailscaleStatusReader: Sendable {
    /// Candidate LocalAPI socket paths, tried in order.
    public var socketPaths: [String]
    /// The `tailscale` command to run when no socket answers (a name on PATH or a path).
    public var command: String
    /// How long one attempt may take.
    public var timeout: Duration

    /// The standard locations on Linux and macOS.
    public static let defaultSocketPaths = [
        "/run/tailscale/tailscaled.sock",
        "/var/run/tailscale/tailscaled.sock",
    ]

    /// Creates a reader; tests point it at a fake socket and a fake command.
    public init(socketPaths: [String] = TailscaleStatusReader.defaultSocketPaths, command: String = "tailscale", timeout: Duration = .seconds(2)) {
        self.socketPaths = socketPaths
        self.command = command
        self.timeout = timeout
    }

    /// Reads the identity, trying the LocalAPI first and the CLI second.
    public func read() throws(TailscaleError) -> TailnetIdentity {
        var failures: [String] = []
        for path in socketPaths where FileManager.default.fileExists(atPath: path) {
            do {
                let body = try LocalAPIRequest.get(path: "/localapi/v0/status", socket: path, timeout: timeout)
                return try TailnetIdentity(statusJSON: body, source: "localapi")
            } catch {
                failures.append("\(path): \(error)")
            }
        }
        guard let executable = TailscaleStatusReader.find(command) else {
            if failures.isEmpty { throw .notInstalled }
            throw .unreachable(failures.joined(separator: "; "))
        }
        let output = try runStatusCommand(executable)
        return try TailnetIdentity(statusJSON: output, source: "cli")
    }

    private func runStatusCommand(_ executable: String) throws(TailscaleError) -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["status", "--json"]
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw .unreachable("cannot run \(executable): \(error.localizedDescription)")
        }
        // Read on another thread so a hung command cannot block past the timeout.
        let output = OutputCollector()
        let done = DispatchSemaphore(value: 0)
        let handle = stdout.fileHandleForReading
        DispatchQueue.global().async {
            output.set(handle.readDataToEndOfFile())
            done.signal()
        }
        let seconds = timeout.inSeconds
        guard done.wait(timeout: .now() + seconds) == .success else {
            process.terminate()
            throw .unreachable("'\(executable) status --json' did not finish within \(timeout)")
        }
        process.waitUntilExit()
        let data = output.get()
        guard process.terminationStatus == 0 || !data.isEmpty else {
            throw .unreachable("'\(executable) status --json' exited with \(process.terminationStatus)")
        }
        return data
    }

    /// Finds a command on PATH, or checks an explicit path.
    public static func find(_ command: String) -> String? {
        if command.contains("/") {
            return FileManager.default.isExecutableFile(atPath: command) ? command : nil
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(command)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

/// Hands a command's output from the reading thread to the caller.
private final class OutputCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ value: Data) { lock.withLock { data = value } }
    func get() -> Data { lock.withLock { data } }
}

/// A minimal HTTP/1.0 GET over a unix socket, enough for tailscaled's LocalAPI.
enum LocalAPIRequest {
    static func get(path: String, socket socketPath: String, timeout: Duration) throws(TailscaleError) -> Data {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw .unreachable("socket(): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var seconds = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        if seconds.tv_sec == 0 && seconds.tv_usec == 0 { seconds.tv_sec = 1 }
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))

        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(socketPath.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { throw .unreachable("socket path too long: \(socketPath)") }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
            buffer[pathBytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { throw .unreachable("connect(\(socketPath)): \(String(cString: strerror(errno)))") }

        let request = "GET \(path) HTTP/1.0\r\nHost: local-tailscaled.sock\r\nConnection: close\r\n\r\n"
        let sent = request.utf8CString.withUnsafeBufferPointer { buffer in
            send(descriptor, buffer.baseAddress, buffer.count - 1, 0)
        }
        guard sent == request.utf8.count else { throw .unreachable("could not send the request to \(socketPath)") }

        var response = Data()
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while response.count < 8 << 20 {
            let count = recv(descriptor, &chunk, chunk.count, 0)
            if count == 0 { break }
            guard count > 0 else { throw .unreachable("reading from \(socketPath): \(String(cString: strerror(errno)))") }
            response.append(contentsOf: chunk[0..<count])
        }
        guard let split = response.range(of: Data("\r\n\r\n".utf8)) else {
            throw .badAnswer("no HTTP header end in \(response.count) bytes")
        }
        let head = String(decoding: response[..<split.lowerBound], as: UTF8.self)
        let status = head.split(separator: " ", maxSplits: 2).dropFirst().first.map(String.init) ?? "?"
        guard status == "200" else {
            throw .badAnswer("HTTP status \(status) for \(path)")
        }
        return Data(response[split.upperBound...])
    }
}
