public import BridgePairingWire
import BridgeTLS
import Foundation
public import Logging

/// Why a short pairing link could not be completed.
public enum PairingCompletionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bridge's certificate does not carry the key whose pin the link's prefix names: another machine answered.
    case pinMismatch(address: String, seen: String)
    /// The bridge answered `GET /api/pair/hello` with another status, or with something else than its details.
    case unexpectedAnswer(address: String, detail: String)
    /// Nothing answered.
    case unreachable(address: String, reason: String)

    /// What went wrong and what to do about it.
    public var description: String {
        switch self {
        case .pinMismatch(let address, let seen):
            return "\(address) presented a certificate (key \(seen)) that is not the one in the QR code: another machine "
                + "answered, or someone is in between. Scan the code again on the desktop's own network"
        case .unexpectedAnswer(let address, let detail):
            return "\(address) did not answer like an oa-bridge (\(detail)); is the QR code from an oa-bridge of this version or later?"
        case .unreachable(let address, let reason):
            return "\(address) cannot be reached (\(reason)); is the phone on the desktop's network, and is 'oa-bridge serve' running?"
        }
    }
}

extension PairingPayload {
    /// This payload with what a short link leaves out (issue 29 item 2); a payload that is not ``isAbridged`` is
    /// returned as it is.
    ///
    /// Asks the bridge at ``http`` for `GET /api/pair/hello` (nothing secret is sent), trusting no certificate but the
    /// one whose SHA-256 key pin starts with the link's 16 bytes (``pinPrefix``); that certificate's full pin becomes
    /// ``pin``, so the exchange that follows, and every later connection, are held to all 32 bytes. The name, session
    /// and fallbacks come from the answer.
    /// - Throws: ``PairingCompletionError``.
    public func completed(timeout: Duration = .seconds(10), logger: Logger = Logger(label: "oa-bridge.pairing")) async throws(PairingCompletionError) -> PairingPayload {
        guard isAbridged else { return self }
        let connector = WebSocketConnector(timeout: timeout, logger: logger)
        let answer: WebSocketConnector.Answer
        do {
            answer = try await connector.request("GET", url: http + "/api/pair/hello")
        } catch {
            throw .unreachable(address: http, reason: "\(error)")
        }
        var full = self
        if let prefix = pinPrefix {
            guard let seen = answer.certificatePin, seen.digest.starts(with: prefix) else {
                throw .pinMismatch(address: http, seen: answer.certificatePin?.description ?? "none")
            }
            full.pin = seen.description
        }
        guard answer.status == 200 else { throw .unexpectedAnswer(address: http, detail: "HTTP \(answer.status)") }
        let hello: PairingPayload
        do {
            hello = try PairingJSON.decoder.decode(PairingPayload.self, from: Data(answer.body))
        } catch {
            throw .unexpectedAnswer(address: http, detail: "not its details")
        }
        full.name = hello.name
        full.session = hello.session
        full.fallbacks = hello.fallbacks
        // The path from the bridge, the address from the link (the one that answered).
        if let path = URL(string: hello.ws)?.path, path.hasPrefix("/"), path != "/", ws.hasSuffix("/") {
            full.ws = String(ws.dropLast()) + path
        }
        return full
    }
}
