import Foundation
import NIOCore
import NIOPosix

/// Reads the tailnet identity: from tailscaled's LocalAPI over its unix socket, or failing that
/// from `tailscale status --json`.
///
/// Nothing blocks a thread: the socket and the command's output are SwiftNIO channels, and every
/// attempt is bounded by ``timeout``.
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
    public func read() async throws(TailscaleError) -> TailnetIdentity {
        var failures: [String] = []
        for path in socketPaths where FileManager.default.fileExists(atPath: path) {
            do {
                let body = try await LocalAPIRequest.get(path: "/localapi/v0/status", socket: path, timeout: timeout)
                return try TailnetIdentity(statusJSON: body, source: "localapi")
            } catch {
                failures.append("\(path): \(error)")
            }
        }
        guard let executable = TailscaleStatusReader.find(command) else {
            if failures.isEmpty { throw .notInstalled }
            throw .unreachable(failures.joined(separator: "; "))
        }
        let output = try await TailscaleCommand(executable: executable, timeout: timeout).statusJSON()
        return try TailnetIdentity(statusJSON: output, source: "cli")
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
