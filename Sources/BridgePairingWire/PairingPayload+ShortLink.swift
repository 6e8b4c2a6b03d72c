import Foundation

/// The short pairing link (issue 29 item 2): what the QR code holds so that it fits an 80×24 terminal.
///
/// `https://<host>:<port>/app#<kind><digits>`: the fragment is decimal digits only, which a QR code stores in its
/// numeric mode at 3.33 bits a digit (base64url in byte mode costs 8 bits a character). It carries only what the phone
/// needs before the exchange; the rest (name, session, fallbacks, the full pin) comes from the bridge afterwards,
/// over the connection the truncated pin has already vouched for.
///
/// | kind | then | when |
/// |---|---|---|
/// | `1` | 39 digits of the 16-byte pairing code, 39 digits of the pin's first 16 bytes | auth on, TLS |
/// | `2` | 39 digits of the 16-byte pairing code | auth on, plaintext only |
/// | `3` | 39 digits of the pin's first 16 bytes | `--auth none`, TLS |
///
/// Each 16-byte value is written as one unsigned 128-bit big-endian number, zero-padded to 39 digits. The pairing
/// code is `oa_p_` + base64url of its 16 bytes; the pin's prefix is the first half of the SHA-256 of the bridge's
/// SubjectPublicKeyInfo. A link without pairing code or pin (no auth, no TLS) has no fragment at all.
extension PairingPayload {
    /// The number of bytes of a pairing code and of a pin prefix in a short link.
    public static let shortSecretByteCount = 16
    /// Decimal digits of one 16-byte value (2^128 has 39 digits).
    static let digitsPerValue = 39

    /// The QR code's text: ``shortAppURL`` when this payload can be abridged, else the long ``appURL``.
    public var qrText: String { shortAppURL ?? appURL }

    /// The short link (see the extension's documentation), or `nil` when this payload cannot be abridged: a pairing
    /// code that is not 16 bytes (an older 32-byte one), a pin that is not a SHA-256, or a WebSocket path other than `/`.
    public var shortAppURL: String? {
        guard URL(string: ws)?.path.isEmptyOrRoot ?? false else { return nil }
        let tokenBytes: [UInt8]?
        if let token {
            guard let bytes = Self.pairingCodeBytes(token) else { return nil }
            tokenBytes = bytes
        } else {
            tokenBytes = nil
        }
        let pinBytes: [UInt8]?
        if let pin {
            guard let digest = Self.pinDigest(pin), digest.count == 32 else { return nil }
            pinBytes = Array(digest.prefix(Self.shortSecretByteCount))
        } else {
            pinBytes = nil
        }
        let base = http + Self.appPath
        switch (tokenBytes, pinBytes) {
        case (let token?, let pin?): return base + "#1" + Self.digits(token) + Self.digits(pin)
        case (let token?, nil): return base + "#2" + Self.digits(token)
        case (nil, let pin?): return base + "#3" + Self.digits(pin)
        case (nil, nil): return base
        }
    }

    /// Whether this payload came from a short link: only the address, the pairing code and a pin prefix are known
    /// (``session`` is empty).
    ///
    /// A native client completes it before use (BridgeClient's `completed()`): the pin from the bridge's
    /// certificate once its first 16 bytes match ``pinPrefix``, the name from `GET /api/pair/hello`.
    public var isAbridged: Bool { session.isEmpty }

    /// The first bytes of the bridge's pin when ``pin`` holds only a prefix (a short link's 16), else `nil`.
    public var pinPrefix: [UInt8]? {
        guard let pin, let digest = Self.pinDigest(pin), digest.count < 32 else { return nil }
        return digest
    }

    /// Reads a short link's fragment (the digits after `#`), or `nil` when `fragment` is not one.
    /// - Parameters:
    ///   - base: the link before `#`, for example `https://192.168.1.20:9099/app`.
    ///   - fragment: the digits after `#`.
    /// - Returns: the abridged payload, or `nil` when `fragment` is not a short link's.
    /// - Throws: ``PairingPayloadError/invalidFragment`` when the digits or `base` do not make a payload.
    static func fromShortLink(base: String, fragment: Substring) throws(PairingPayloadError) -> PairingPayload? {
        guard let kind = fragment.first, fragment.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        let body = fragment.dropFirst()
        let values: [[UInt8]]
        switch (kind, body.count) {
        case ("1", 2 * digitsPerValue), ("2", digitsPerValue), ("3", digitsPerValue):
            var parsed: [[UInt8]] = []
            var rest = body
            while !rest.isEmpty {
                guard let value = UInt128(String(rest.prefix(digitsPerValue))) else { throw .invalidFragment }
                parsed.append(bytes(value))
                rest = rest.dropFirst(digitsPerValue)
            }
            values = parsed
        default:
            throw .invalidFragment
        }
        guard let components = URLComponents(string: base), let scheme = components.scheme?.lowercased(),
              let host = components.host, !host.isEmpty else { throw .invalidFragment }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        let token = kind == "3" ? nil : TokenPrefix.pairing + base64URL(Data(values[0]))
        let pinBytes: [UInt8]? = kind == "1" ? values[1] : kind == "3" ? values[0] : nil
        if pinBytes == nil, scheme == "https" { throw .invalidFragment }
        let authority = "\(LANAddress.bracketedIfIPv6(host)):\(port)"
        let secure = scheme == "https"
        return PairingPayload(
            ws: "\(secure ? "wss" : "ws")://\(authority)/", http: "\(secure ? "https" : "http")://\(authority)", session: "",
            name: host, token: token, fallbacks: [],
            pin: pinBytes.map { "sha256/" + Data($0).base64EncodedString() })
    }

    /// The 16 bytes of a pairing code `oa_p_` + 22 base64url characters, else `nil`.
    static func pairingCodeBytes(_ token: String) -> [UInt8]? {
        guard token.hasPrefix(TokenPrefix.pairing) else { return nil }
        let body = token.dropFirst(TokenPrefix.pairing.count)
        guard body.count == 22, let data = dataFromBase64URL(String(body)), data.count == shortSecretByteCount else { return nil }
        // Only the canonical spelling: the bridge compares the text, so the link must give back exactly this token.
        guard base64URL(data) == body else { return nil }
        return Array(data)
    }

    /// The bytes of `sha256/<base64>` (any length), else `nil`.
    static func pinDigest(_ pin: String) -> [UInt8]? {
        guard pin.lowercased().hasPrefix("sha256/"), let data = Data(base64Encoded: String(pin.dropFirst(7))), !data.isEmpty else {
            return nil
        }
        return Array(data)
    }

    /// 16 bytes as a zero-padded 39-digit decimal number.
    static func digits(_ bytes: [UInt8]) -> String {
        var value: UInt128 = 0
        for byte in bytes { value = value << 8 | UInt128(byte) }
        let text = String(value)
        return String(repeating: "0", count: max(0, digitsPerValue - text.count)) + text
    }

    /// A 128-bit number as 16 big-endian bytes.
    static func bytes(_ value: UInt128) -> [UInt8] {
        (0..<16).map { UInt8(truncatingIfNeeded: value >> (8 * (15 - $0))) }
    }
}

/// The prefix of pairing codes (`oa_p_`), known here so the wire layer can rebuild a code from a short link.
enum TokenPrefix {
    static let pairing = "oa_p_"
}

extension String {
    fileprivate var isEmptyOrRoot: Bool { isEmpty || self == "/" }
}
