public import BridgeTLS

/// Why ``WebSocketConnector`` could not open a WebSocket, each case saying what to try next.
///
/// Match on the case, never on the text: the descriptions are for people.
public enum WebSocketConnectorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The URL cannot be used (`ws://` or `wss://`, a host, an optional port, a path).
    case invalidURL(String, reason: String)
    /// The peer answered the TCP connection with a reset: nothing listens on that address and port.
    case refused(address: String)
    /// The address could not be reached or the connection failed before the upgrade (no route, host down, reset…).
    case unreachable(address: String, reason: String)
    /// TCP, TLS and the upgrade together took longer than the time allowed.
    case timedOut(address: String, after: Duration)
    /// The HTTP upgrade was answered with `status` instead of `101`. A bridge sends a JSON body
    /// `{"error":…,"message":…}`; `error` and `message` are its fields when it did.
    case upgradeRefused(status: Int, error: String?, message: String?)
    /// The bridge accepts this only over TLS (`403 tls_required`): connect with `wss://`.
    case tlsRequired(message: String?)
    /// The certificate's public key is not the pinned one.
    case pinMismatch(expected: CertificatePin, seen: CertificatePin)
    /// A `wss://` connection whose peer did not complete a TLS handshake (a plaintext server, or not a bridge).
    case notTLS(address: String, reason: String)
    /// The peer completed its part of TLS and presented a certificate (with pin `pin`, when it could be read), but the
    /// certificate was not accepted: a certificate problem (an unreadable or unusable certificate), never the network's.
    case certificateRejected(address: String, pin: CertificatePin?, reason: String)
    /// The peer broke the WebSocket protocol during the upgrade or afterwards.
    case protocolViolation(String)

    /// Whether the bridge is there and wants a (valid) token: a `401` or `403` to the upgrade, other than `tls_required`.
    public var needsPairing: Bool {
        if case .upgradeRefused(let status, _, _) = self { return status == 401 || status == 403 }
        return false
    }

    /// Whether the bridge refused the name or page the client came by (`forbidden_host`, `forbidden_origin`: a host
    /// name it does not know as its own), which no pairing changes.
    public var refusesHostOrOrigin: Bool {
        if case .upgradeRefused(403, let error?, _) = self { return error == "forbidden_host" || error == "forbidden_origin" }
        return false
    }

    /// The HTTP status the upgrade was answered with, when it was refused.
    public var upgradeStatus: Int? {
        if case .upgradeRefused(let status, _, _) = self { return status }
        return nil
    }

    /// What failed, at which address, and how to write the URL or what to check next.
    public var description: String {
        switch self {
        case .invalidURL(let url, let reason):
            return "cannot use '\(url)': \(reason). Write ws://HOST:PORT/ or wss://HOST:PORT/ (IPv6 as [ADDRESS], a zone as %25NAME)."
        case .refused(let address):
            return "nothing listens on \(address) (connection refused): start the bridge with 'oa-bridge serve', or check the port"
        case .unreachable(let address, let reason):
            return "cannot reach \(address): \(reason). Check that this device and the desktop are on the same network"
        case .timedOut(let address, let after):
            return "no answer from \(address) within \(after): a firewall may drop the connection, or the address is not the desktop's"
        case .upgradeRefused(let status, let error, let message):
            let detail = TerminalText.escapedLine([error, message].compactMap { $0 }.joined(separator: ": "))
            let said = detail.isEmpty ? "" : " (\(detail))"
            if refusesHostOrOrigin {
                return "the bridge refused the WebSocket with HTTP \(status)\(said): it does not know the name this client used as its own; "
                    + "connect by its address, or give the bridge that name (its Tailscale name is learnt from tailscaled)"
            }
            if status == 401 || status == 403 {
                return "the bridge refused the WebSocket with HTTP \(status)\(said): pair with the QR code from 'oa-bridge pair' on the desktop"
            }
            return "the WebSocket upgrade was answered with HTTP \(status)\(said): is this address a bridge?"
        case .tlsRequired(let message):
            return "the bridge accepts this only over TLS\(message.map { " (\($0))" } ?? ""): connect with wss://, pairing again with 'oa-bridge pair' on the desktop to get its pin"
        case .pinMismatch(let expected, let seen):
            return "the desktop's identity changed or someone is in between: its key is \(seen), the pin stored at pairing is \(expected). "
                + "If the desktop's identity was rotated, pair again with the QR code from 'oa-bridge pair'; compare the pin it prints"
        case .notTLS(let address, let reason):
            return "\(address) did not complete a TLS handshake (\(reason)): it may speak plaintext only; an older bridge needs ws://"
        case .certificateRejected(let address, let pin, let reason):
            return "the certificate \(address) presented\(pin.map { " (key \($0))" } ?? "") was not accepted (\(reason)): "
                + "compare its pin with the one 'oa-bridge pair' prints on the desktop, and pair again if the identity was rotated"
        case .protocolViolation(let what):
            return "the peer broke the WebSocket protocol: \(what)"
        }
    }
}
