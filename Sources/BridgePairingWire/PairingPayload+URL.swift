import Foundation

/// Why text read from a QR code is not a pairing payload.
///
/// The messages never repeat the text (it holds a token).
public enum PairingPayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is neither JSON nor an `http(s)://` URL.
    case unrecognized
    /// The text looks like JSON but is not a pairing payload (the decoder's reason, without the text).
    case invalidJSON(reason: String)
    /// The text is an `http(s)://` URL without a `#fragment` holding the payload.
    case missingFragment
    /// The URL's fragment is not base64url.
    case invalidFragment

    /// What the desktop does for the user to get a good code again, named by the command line in its own words (the
    /// library names no command's flags, issue 31 item 5).
    public enum DesktopStep: Sendable, Equatable {
        /// The desktop prints the pairing payload (its JSON, with the QR code's URL as `url`).
        case printPayload
        /// The desktop revokes the code and makes a new one.
        case newCode
    }

    /// The desktop's step that gets a good code again.
    public var desktopStep: DesktopStep {
        switch self {
        case .unrecognized, .invalidJSON, .missingFragment: .printPayload
        case .invalidFragment: .newCode
        }
    }

    /// What went wrong and what to do about it.
    public var description: String {
        switch self {
        case .unrecognized:
            return "this is not a pairing code: expected the QR code's URL (https://<desktop>:9099/app#…) or its JSON "
                + "(the desktop's pairing command prints it)"
        case .invalidJSON(let reason):
            return "the pairing JSON is not valid (\(reason)); copy it again from what the desktop's pairing command prints"
        case .missingFragment:
            return "the pairing URL has no '#…' part; copy the whole URL the QR code holds (the desktop's pairing command prints it as 'url')"
        case .invalidFragment:
            return "the pairing URL's '#…' part is damaged (not base64url JSON); scan the QR code again or make a new code on the desktop"
        }
    }
}

extension PairingPayload {
    /// The path of the phone web app the QR code's URL opens.
    public static let appPath = "/app"

    /// The long link: `<http>/app#<payload as base64url JSON>`, for example `https://192.168.1.20:9099/app#eyJ…`.
    ///
    /// The QR code holds the short link (``qrText``) when it can; the long one keeps working everywhere.
    ///
    /// A phone's camera opens it in the browser; the web app reads the payload from the fragment, which browsers never
    /// send to the server. Native clients take the same text (``init(scannedText:)``).
    public var appURL: String {
        http + Self.appPath + "#" + Self.base64URL(Data(jsonString().utf8))
    }

    /// Reads what a QR code (or a user) gave: the JSON payload, the web app URL carrying it in its fragment
    /// (`https://…/app#<base64url JSON>`), or the short link (`https://…/app#1<digits>`, see ``shortAppURL``; the
    /// payload is then ``isAbridged``).
    ///
    /// Surrounding white space is ignored.
    public init(scannedText: String) throws(PairingPayloadError) {
        let text = scannedText.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("{") {
            self = try Self.fromJSON(Data(text.utf8))
            return
        }
        let lower = text.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") else { throw .unrecognized }
        guard let hash = text.firstIndex(of: "#") else { throw .missingFragment }
        let fragment = text[text.index(after: hash)...]
        guard !fragment.isEmpty else { throw .missingFragment }
        if let short = try Self.fromShortLink(base: String(text[..<hash]), fragment: fragment) {
            self = short
            return
        }
        guard let data = Self.dataFromBase64URL(String(fragment)) else { throw .invalidFragment }
        self = try Self.fromJSON(data)
    }

    /// Parses a payload read from a QR code: its JSON or the web app URL (see ``init(scannedText:)``).
    public static func decode(_ text: String) throws(PairingPayloadError) -> PairingPayload {
        try PairingPayload(scannedText: text)
    }

    private static func fromJSON(_ data: Data) throws(PairingPayloadError) -> PairingPayload {
        do {
            return try JSONDecoder().decode(PairingPayload.self, from: data)
        } catch let error as DecodingError {
            throw .invalidJSON(reason: Self.reason(error))
        } catch {
            throw .invalidJSON(reason: "unreadable")
        }
    }

    /// The decoder's reason without any of the input (a token must not reach a message).
    private static func reason(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): return "'\(key.stringValue)' is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "'\(context.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type"
        case .dataCorrupted: return "not JSON"
        @unknown default: return "unreadable"
        }
    }

    /// Base64url without padding (RFC 4648 §5).
    static func base64URL(_ data: Data) -> String {
        var text = data.base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Decodes base64url with or without padding (standard base64 is accepted too); `nil` for anything else.
    static func dataFromBase64URL(_ text: String) -> Data? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard standard.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "/" || $0 == "=") }) else {
            return nil
        }
        while standard.count % 4 != 0 { standard.append("=") }
        return Data(base64Encoded: standard)
    }
}

/// The body of `GET /api/pair/info` (and `POST /api/pair/refresh`): the payload's JSON fields for native apps, plus
/// `url`, the text the QR code holds (``PairingPayload/qrText``).
public struct PairingInfo: Sendable, Equatable, Codable {
    /// The payload.
    public var payload: PairingPayload
    /// The web app URL the QR code holds (the short link when the payload has one).
    public var url: String

    enum CodingKeys: String, CodingKey {
        case url
    }

    /// The info for `payload`.
    public init(payload: PairingPayload) {
        self.payload = payload
        self.url = payload.qrText
    }

    /// Decodes the payload's fields and `url` from one object.
    public init(from decoder: any Decoder) throws {
        payload = try PairingPayload(from: decoder)
        url = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .url)
    }

    /// Encodes the payload's fields and `url` into one object.
    public func encode(to encoder: any Encoder) throws {
        try payload.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(url, forKey: .url)
    }

    /// Compact JSON with sorted keys and unescaped slashes.
    public func jsonString() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
