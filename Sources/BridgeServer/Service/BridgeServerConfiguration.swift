public import BridgeACP
public import BridgePairing
public import BridgeSandbox
public import BridgeSessionStore
public import BridgeTLS
public import BridgeTailscale
public import BridgeTerminal
public import BridgeTime
public import BridgeWorkspace
public import Foundation
import NIOPosix
public import Prometheus

/// Everything `oa-bridge serve` needs to run the bridge.
public struct BridgeServerConfiguration: Sendable {
    /// The address to bind.
    ///
    /// The default, ``dualStackHost``, is `::` (every IPv6 address, and IPv4 through IPv4-mapped addresses) or
    /// `0.0.0.0` where IPv6 is off; `0.0.0.0` is IPv4 only, `127.0.0.1` this machine only.
    public var host: String = BridgeServerConfiguration.dualStackHost
    /// The TCP port; 0 picks a free one (reported through `onListening`).
    public var port: Int = 9099
    /// The WebSocket path.
    public var path: String = "/"
    /// The agent to run, `["gemini", "--acp"]`; `nil` runs ``inProcessAgent``'s, or the built-in demo agent.
    public var agentCommand: [String]? = nil
    /// Makes an agent that runs in this process (a test's scripted agent) when ``agentCommand`` is `nil`: called for
    /// each agent the bridge starts (the first, and the next after one ended).
    ///
    /// `nil`: the built-in demo agent.
    public var inProcessAgent: (@Sendable () -> any ACPAgent)? = nil
    /// Extra environment variables for the agent process.
    public var agentEnvironment: [String: String] = [:]
    /// The agent process's working directory; `nil` uses ``workingDirectory``.
    public var agentWorkingDirectory: String? = nil
    /// Whether the agent process itself runs under Landlock (`--sandbox-agent`), as terminals do: it writes only in its
    /// working directory, the `--fs-scope` directory and a temporary directory of its own, reads those, the system's
    /// directories and its own installation, never the bridge's files; it is started from its directory's descriptor and
    /// dies with the bridge (see `BridgeAgentLauncher`).
    ///
    /// Unsandboxed, it starts with Foundation's `Process`.
    public var sandboxAgent: Bool = false
    /// Directories a sandboxed agent may also write and read (`--sandbox-agent-write`): the state it keeps outside the
    /// session.
    ///
    /// Missing ones are skipped; the bridge's own files stay out of reach beneath them.
    public var sandboxAgentWritable: [String] = []
    /// The directory sessions work in: reported to clients, the default `cwd` of `session/new`, and the
    /// boundary of `fs/read_text_file` / `fs/write_text_file` (a session's `cwd` must lie inside it).
    public var workingDirectory: String
    /// The largest WebSocket message accepted, in bytes; larger ones get an error (or a 1009 close when far larger).
    ///
    /// The default, ``defaultMaxFrameSize`` (16 MiB), lets a prompt carry a photo from a phone's camera.
    public var maxFrameSize: Int = BridgeServerConfiguration.defaultMaxFrameSize
    /// The default ``maxFrameSize``: 16 MiB.
    public static let defaultMaxFrameSize = 16 << 20
    /// Whether WebSocket upgrades may negotiate permessage-deflate (RFC 7692; `--no-compression` turns it off).
    public var compression: Bool = true
    /// How long a new connection may take to complete `initialize` before it is closed.
    public var initializeTimeout: Duration = .seconds(10)
    /// How long the bridge waits for the agent to answer its own `initialize`.
    public var agentInitializeTimeout: Duration = .seconds(30)
    /// The most requests one connection may have waiting for the agent at once.
    public var maxPendingRequests: Int = 64
    /// How often to ping each client; a client that has not answered the previous ping by then is closed.
    ///
    /// `nil` turns keepalive off.
    public var pingInterval: Duration? = .seconds(30)
    /// The name this bridge goes by (the service name, for example the host name).
    public var serverName: String
    /// The bridge's version, reported in `initialize`'s `_meta`.
    public var serverVersion: String = "0.1.0"
    /// The pause between the demo agent's streamed chunks.
    public var demoChunkDelay: Duration = .milliseconds(20)
    /// Decides whether a WebSocket upgrade may proceed (authentication lives here); `nil` allows every upgrade.
    public var authorizeUpgrade: BridgeUpgradeAuthorizer? = nil

    /// Token checks for `/api/*` (Bearer) and the pairing exchange routes; `nil` with `--auth none`.
    public var authenticator: Authenticator? = nil
    /// How often the token store is polled for revoked devices and token families (their WebSockets are closed with
    /// 4003); revocations made by another process (`oa-bridge devices revoke`) are seen within this time.
    ///
    /// Those made by this process (logout, refresh-token reuse, the pairing page's deny) close the sockets at once.
    public var revocationPollInterval: Duration = .milliseconds(500)
    /// The bridge's TLS identity: with one, the port speaks TLS (`wss://`, `https://`) and plaintext side by side,
    /// told apart by the first byte; `nil` serves plaintext only (tests).
    public var tlsIdentity: BridgeIdentity? = nil
    /// The tailnet's HTTPS certificate for the MagicDNS name, served (beside ``tlsIdentity``) to TLS clients that ask
    /// for that name by SNI, fetched from tailscaled and renewed while the server runs; `nil`: the identity only.
    public var tailscaleCertificates: TailscaleCertificates? = nil
    /// `--allow-plaintext`: accept tokens, pairing and WebSocket upgrades in clear from other machines too (see
    /// `PlaintextPolicy`).
    ///
    /// Off by default: from a non-loopback peer such requests need TLS.
    public var allowPlaintext: Bool = false
    /// The current pairing code and QR payload, for `/pair` and `/api/pair/*` (loopback only); `nil` leaves
    /// those routes out.
    public var pairing: PairingSession? = nil

    /// With ``authenticator`` `nil` (`--auth none`): networks in CIDR notation (`192.168.1.0/24`, `fd00::/8`) whose
    /// peers may open a WebSocket or use `/api/` besides loopback; everyone else gets 403.
    ///
    /// Ignored with auth on.
    public var allowedNetworks: [String] = []
    /// The most WebSocket connections at once; beyond it upgrades are refused with 503 (`too_many_connections`).
    public var maxConnections: Int = 1024
    /// A WebSocket that opens while at most this many are open (itself included) runs on its channel's event loop:
    /// its messages reach the hub, and its answers go out, on the thread that read them, with no hand-off between
    /// threads (the lowest latency for a phone or two).
    ///
    /// The ones beyond it run on the global executor, so that with many clients the hub's work and the event loops'
    /// I/O overlap instead of sharing the loops' threads. 0: none.
    public var eventLoopConnections: Int = 2
    /// Connections allowed besides the WebSockets: every accepted TCP connection counts, and beyond
    /// ``maxConnections`` plus this one more gets `503` (`server_busy`) and is closed.
    public var maxHTTPConnections: Int = 256
    /// Connections from one IP address that have not yet got their first answer (a request head still coming, or
    /// nothing sent yet); one more gets `503` (`too_many_pending_connections`) and is closed.
    public var maxPendingConnectionsPerAddress: Int = 128
    /// How long a new connection has, from accept, to send a complete request (head and body) and so get its first
    /// answer (an HTTP response or the WebSocket `101`); it is closed when the time is up.
    public var requestHeadTimeout: Duration = .seconds(10)
    /// How long a plain-HTTP (kept-alive, not WebSocket) connection may wait for its next request before it is closed.
    public var httpIdleTimeout: Duration = .seconds(30)
    /// How many `session/update` notifications each session keeps for `_oa/session/resume`.
    public var replayBufferSize: Int = 1000
    /// How many bytes of `session/update` notifications (their JSON params) each session keeps for
    /// `_oa/session/resume`, besides ``replayBufferSize``; the oldest go first (default 8 MiB).
    public var replayBufferBytes: Int = 8 << 20
    /// How many idle sessions (no connection attached, no prompt running) the bridge keeps, with how many bytes of
    /// replay, and for how long (`--max-idle-sessions`, `--max-idle-replay-bytes`, `--idle-session-timeout`); past
    /// that the longest idle are dropped (see ``SessionRetention``).
    public var retention = SessionRetention()
    /// The most sessions one connection may create or attach to (`session/new`, `session/load`,
    /// `_oa/session/resume`); past it they get error -32003.
    public var maxSessionsPerConnection: Int = 64
    /// The most messages in one JSON-RPC batch; a larger batch gets one error -32004 and none of it is run.
    public var maxBatchSize: Int = 1000
    /// How long a request of the agent (for example a permission) waits when no client is attached to its session (the phone
    /// is reconnecting, see `_oa/session/resume`) before it is answered as nobody can (a permission: `cancelled`).
    public var orphanedRequestTimeout: Duration = .seconds(300)
    /// How long the agent's `session/request_permission` may wait for a phone's answer (attached or not) before the
    /// agent gets a JSON-RPC error (-32603): long, a person decides.
    public var permissionRequestTimeout: Duration = .seconds(1800)
    /// How long any other request of the agent forwarded to phones (`elicitation/create`, extension methods…) may
    /// wait for an answer before the agent gets a JSON-RPC error (-32603).
    public var clientRequestTimeout: Duration = .seconds(120)
    /// How long one `fs/read_text_file` or `fs/write_text_file` of the agent may take (it runs on a thread pool, off
    /// the hub); past it the agent is answered with an error (-32603) and the call is abandoned.
    public var fileRequestTimeout: Duration = .seconds(10)

    /// The threads the agent's file calls run on (each bounded by ``fileRequestTimeout`` on ``clock``): NIO's shared
    /// pool; a test gives one of its own, whose thread it can hold.
    var fileThreadPool: NIOThreadPool = .singleton
    /// How far `fs/read_text_file` and `fs/write_text_file` reach (`--fs-scope`): the session's directories (default),
    /// also the home directory, or any path; never through a symbolic link beyond it.
    public var fileScope: WorkspaceScope = .workspace
    /// The bridge's own files (its state directory, its configuration), which neither `fs/*` requests nor terminals
    /// reach, whatever ``fileScope`` says; nothing by default (`serve` protects its state and configuration).
    public var protectedFiles: ProtectedFiles = .none
    /// The agent's `terminal/*` requests: served or not (`--no-terminal`), and their limits.
    public var terminal = TerminalSettings()
    /// On graceful shutdown: how long prompts in flight may run on before they are cancelled.
    public var shutdownGracePeriod: Duration = .seconds(5)
    /// The time the bridge's own timers run on (the sweeps of stuck clients and orphaned requests, the shutdown
    /// grace period, write stalls); tests inject a clock they move by hand.
    public var clock: any BridgeClock = ContinuousClock()
    /// Where sessions are kept across restarts (`sessions.sqlite` in the state directory); `nil` keeps them in memory
    /// only.
    ///
    /// `BridgeService` opens it beside the token store.
    public var sessionStore: SessionStore? = nil

    /// Where `GET /metrics` reads from (loopback only); `nil` leaves the route out.
    public var metricsRegistry: PrometheusCollectorRegistry? = nil

    /// Creates a configuration; every other setting starts at its default.
    public init(serverName: String, workingDirectory: String = FileManager.default.currentDirectoryPath) {
        self.serverName = serverName
        self.workingDirectory = workingDirectory
    }
}

extension BridgeServerConfiguration {
    /// `::` when one IPv6 socket here can take both families (IPv6 in the kernel, and a new socket not IPv6-only:
    /// `net.ipv6.bindv6only` is 0), so every address avahi advertises answers; else `0.0.0.0`.
    public static var dualStackHost: String {
        #if canImport(Glibc)
        let probe = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let probe = socket(AF_INET6, SOCK_STREAM, 0)
        #endif
        guard probe >= 0 else { return "0.0.0.0" }
        defer { close(probe) }
        var v6Only: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(probe, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &v6Only, &length) == 0, v6Only == 0 else { return "0.0.0.0" }
        return "::"
    }
}
