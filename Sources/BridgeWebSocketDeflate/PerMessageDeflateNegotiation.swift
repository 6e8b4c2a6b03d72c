/// The permessage-deflate handshake (RFC 7692 §5, §7.1): the server's choice among a client's offers, and the client's
/// offer and its check of the server's answer.
public enum PerMessageDeflateNegotiation {
    /// The extension's name.
    public static let name = "permessage-deflate"
    /// The header both ends use.
    public static let headerName = "Sec-WebSocket-Extensions"

    /// A server's acceptance: the parameters in force and the `Sec-WebSocket-Extensions` value to answer with.
    public struct Acceptance: Sendable, Equatable {
        /// What both ends now use.
        public var parameters: PerMessageDeflateParameters
        /// The response header's value.
        public var responseHeader: String
    }

    /// The first of the client's `permessage-deflate` offers (in `headerValues`, the request's
    /// `Sec-WebSocket-Extensions` values) this server can accept, or `nil` to decline them all (the upgrade goes on
    /// without compression).
    ///
    /// An offer is declined (RFC 7692 §5.1) when a parameter is unknown, repeated, or has an invalid value, or when it
    /// asks for `server_max_window_bits=8` (zlib makes no 8-bit raw deflate stream). An accepted offer gets:
    /// - `server_max_window_bits` = the smaller of the offer's and ``PerMessageDeflateSettings/maxWindowBits`` (echoed
    ///   only when offered; otherwise the server still compresses with its own smaller window, which any inflater
    ///   reads);
    /// - `server_no_context_takeover` when offered;
    /// - `client_no_context_takeover` always (RFC 7692 §7.1.1.2 lets a server ask for it): the server inflates each
    ///   message with a fresh inflater that it frees at the message's end, so an idle connection holds no inflater.
    public static func accept(offers headerValues: [String], settings: PerMessageDeflateSettings) -> Acceptance? {
        for element in WebSocketExtensionHeader.parse(headerValues) {
            guard let element, element.name.lowercased() == name, let acceptance = accept(element, settings: settings) else {
                continue
            }
            return acceptance
        }
        return nil
    }

    private static func accept(_ offer: WebSocketExtensionElement, settings: PerMessageDeflateSettings) -> Acceptance? {
        var seen = Set<String>()
        var serverNoContextTakeover = false
        var serverMaxWindowBits: Int?
        for (key, value) in offer.parameters {
            let key = key.lowercased()
            guard seen.insert(key).inserted else { return nil }
            switch key {
            case "server_no_context_takeover":
                guard value == nil else { return nil }
                serverNoContextTakeover = true
            case "client_no_context_takeover":
                guard value == nil else { return nil }
            case "server_max_window_bits":
                guard let bits = value.flatMap(windowBits), bits >= 9 else { return nil }
                serverMaxWindowBits = bits
            case "client_max_window_bits":
                if let value { guard windowBits(value) != nil else { return nil } }
            default:
                return nil
            }
        }
        let bits = min(serverMaxWindowBits ?? 15, settings.maxWindowBits)
        var response = name
        if serverNoContextTakeover { response += "; server_no_context_takeover" }
        response += "; client_no_context_takeover"
        if serverMaxWindowBits != nil { response += "; server_max_window_bits=\(bits)" }
        return Acceptance(
            parameters: PerMessageDeflateParameters(
                serverMaxWindowBits: bits, serverNoContextTakeover: serverNoContextTakeover,
                clientMaxWindowBits: 15, clientNoContextTakeover: true),
            responseHeader: response)
    }

    /// A window size parameter's value: `8`…`15`, digits only, no leading zero (RFC 7692 §7.1.2).
    static func windowBits(_ text: String) -> Int? {
        guard !text.hasPrefix("0"), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let bits = Int(text),
              (8...15).contains(bits) else { return nil }
        return bits
    }

    /// The client's offer: permessage-deflate, its own messages each compressed on their own (so it keeps no
    /// compressor between them), any window the server likes (`client_max_window_bits` lets it pick ours).
    public static let clientOffer = "permessage-deflate; client_no_context_takeover; client_max_window_bits"

    /// The parameters a server's answer (its `Sec-WebSocket-Extensions` values) settles for ``clientOffer``: `nil`
    /// when it declined (no header), else what it chose.
    /// - Throws: ``PerMessageDeflateError/invalidResponse(_:)`` for an answer the offer did not allow (another
    ///   extension, a repeated, unknown or out-of-range parameter): RFC 7692 §5 has the client fail the connection.
    public static func clientAccept(response headerValues: [String]) throws(PerMessageDeflateError) -> PerMessageDeflateParameters? {
        let elements = WebSocketExtensionHeader.parse(headerValues)
        guard !elements.isEmpty else { return nil }
        guard elements.count == 1, let element = elements[0] else {
            throw .invalidResponse("expected one permessage-deflate element, got \(headerValues.joined(separator: ", "))")
        }
        guard element.name.lowercased() == name else { throw .invalidResponse("an extension not offered: \(element.name)") }
        var parameters = PerMessageDeflateParameters(clientNoContextTakeover: true)
        var seen = Set<String>()
        for (key, value) in element.parameters {
            let key = key.lowercased()
            guard seen.insert(key).inserted else { throw .invalidResponse("\(key) given twice") }
            switch key {
            case "server_no_context_takeover":
                guard value == nil else { throw .invalidResponse("\(key) with a value") }
                parameters.serverNoContextTakeover = true
            case "client_no_context_takeover":
                guard value == nil else { throw .invalidResponse("\(key) with a value") }
            case "server_max_window_bits", "client_max_window_bits":
                guard let bits = value.flatMap(windowBits) else { throw .invalidResponse("\(key)=\(value ?? "") is not 8 to 15") }
                if key == "server_max_window_bits" { parameters.serverMaxWindowBits = bits } else { parameters.clientMaxWindowBits = bits }
            default:
                throw .invalidResponse("unknown parameter \(key)")
            }
        }
        return parameters
    }
}
