import BridgeHTTP
import BridgePairing
import BridgeTLS
import BridgeTailscale
import Hummingbird
import Logging

/// The browser check of every WebSocket upgrade and state-changing HTTP request, in every mode (issue 27 item 1):
/// a browser `Origin` other than the bridge's own page is refused (403 `forbidden_origin`), and so, on plaintext
/// connections, is a page that reached the bridge by a host name that is not one of its own (403 `forbidden_host`:
/// DNS rebinding).
///
/// Native clients send no `Origin` and are not affected. See
/// ``BridgePairing/NetworkPolicy/browserRefusal(origin:host:names:checkHostName:)``.
struct BrowserOriginPolicy: Sendable {
    /// The host names the bridge goes by (lower case, no trailing dot); IP addresses and `localhost` always pass.
    let names: Set<String>

    /// A policy accepting `names` (and addresses, and `localhost`).
    init(names: Set<String>) {
        self.names = Set(names.compactMap { NetworkPolicy.hostName(fromHostHeader: $0) })
    }

    /// The names of a bridge: its service name and this machine's host name (each also as `<name>.local`), the names
    /// its TLS certificate carries, the Tailscale MagicDNS name, and the host it binds to when that is a name.
    init(for configuration: BridgeServerConfiguration) {
        var names: Set<String> = []
        for name in [configuration.serverName, HostName.current] where !name.isEmpty {
            names.insert(name)
            if !name.contains(".") { names.insert(name + ".local") }
        }
        names.formUnion(configuration.tlsIdentity?.dnsNames ?? [])
        if let tailnet = configuration.tailscaleCertificates?.name { names.insert(tailnet) }
        if !NetworkPolicy.isAddressLiteral(configuration.host) { names.insert(configuration.host) }
        self.init(names: names)
    }

    /// The refusal of a request with `origin` and `host` on a connection that is (or is not) TLS; `nil` when it passes.
    func refusal(origin: String?, host: String?, isTLS: Bool) -> JSONErrorResponse? {
        guard let refused = NetworkPolicy.browserRefusal(origin: origin, host: host, names: names, checkHostName: !isTLS) else {
            return nil
        }
        return JSONErrorResponse(status: .forbidden, code: refused.code, message: refused.message)
    }

    /// The refusal of a WebSocket upgrade, logged (the `Origin` and `Host` only, never a token); `nil` when it passes.
    func upgradeRefusal(_ request: Request, context: some TransportAwareRequestContext, logger: Logger) -> JSONErrorResponse? {
        let origin = request.headers[.origin]
        guard let refusal = refusal(origin: origin, host: request.head.authority, isTLS: context.isTLS) else { return nil }
        logger.notice("WebSocket upgrade refused: a web page of another site or host name", metadata: [
            "error": "\(refusal.code)", "origin": "\(origin ?? "-")", "host": "\(request.head.authority ?? "-")",
            "remote": "\(context.remoteAddress?.ipAddress ?? "?")",
        ])
        return refusal
    }
}
