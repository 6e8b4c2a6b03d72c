/// One element of a `Sec-WebSocket-Extensions` header (RFC 6455 §9.1): an extension name and its parameters, in order.
public struct WebSocketExtensionElement: Sendable, Equatable {
    /// The extension's name (a token), for example `permessage-deflate`.
    public var name: String
    /// Its parameters in order: name and value (`nil` for a parameter without one; a quoted value unquoted).
    public var parameters: [(name: String, value: String?)]

    /// An element as given.
    public init(name: String, parameters: [(name: String, value: String?)] = []) {
        self.name = name
        self.parameters = parameters
    }

    /// Equal when the names and the parameters, in order, are.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.name == rhs.name && lhs.parameters.count == rhs.parameters.count
            && zip(lhs.parameters, rhs.parameters).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }
}

/// Parses `Sec-WebSocket-Extensions` values (RFC 6455 §9.1, RFC 7230 lists): elements separated by commas, parameters
/// by semicolons, values a token or a quoted string (whose content must itself be a token).
public enum WebSocketExtensionHeader {
    /// The elements of every value of the header, in order.
    ///
    /// An element that does not parse is `nil` in its place, so a server declines that offer and still considers the
    /// next (RFC 7692 §5: a malformed offer is declined, not fatal).
    public static func parse(_ values: [String]) -> [WebSocketExtensionElement?] {
        var elements: [WebSocketExtensionElement?] = []
        for value in values {
            guard let parts = split(value, on: ",") else {
                elements.append(nil)
                continue
            }
            for part in parts where !trim(part).isEmpty {
                elements.append(element(part))
            }
        }
        return elements
    }

    private static func element(_ text: Substring) -> WebSocketExtensionElement? {
        guard let pieces = split(text, on: ";") else { return nil }
        let name = trim(pieces[0])
        guard isToken(name) else { return nil }
        var parameters: [(name: String, value: String?)] = []
        for piece in pieces.dropFirst() {
            let piece = trim(piece)
            if let equals = piece.firstIndex(of: "=") {
                let key = trim(piece[..<equals])
                var value = trim(piece[piece.index(after: equals)...])
                if value.hasPrefix("\"") {
                    guard let unquoted = unquote(value) else { return nil }
                    value = Substring(unquoted)
                }
                guard isToken(key), isToken(value) else { return nil }
                parameters.append((String(key), String(value)))
            } else {
                guard isToken(piece) else { return nil }
                parameters.append((String(piece), nil))
            }
        }
        return WebSocketExtensionElement(name: String(name), parameters: parameters)
    }

    /// Splits on `separator` outside quoted strings; `nil` for an unterminated quote.
    private static func split(_ text: some StringProtocol, on separator: Character) -> [Substring]? {
        let text = Substring(text)
        var parts: [Substring] = []
        var start = text.startIndex
        var quoted = false
        var escaped = false
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if escaped {
                escaped = false
            } else if quoted && character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if !quoted && character == separator {
                parts.append(text[start..<index])
                start = text.index(after: index)
            }
            index = text.index(after: index)
        }
        guard !quoted else { return nil }
        parts.append(text[start...])
        return parts
    }

    private static func unquote(_ text: Substring) -> String? {
        guard text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") else { return nil }
        var result = ""
        var escaped = false
        for character in text.dropFirst().dropLast() {
            if escaped {
                result.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                return nil
            } else {
                result.append(character)
            }
        }
        return escaped ? nil : result
    }

    private static func trim(_ text: Substring) -> Substring {
        var text = text
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }

    /// RFC 7230's token: visible ASCII except separators.
    static func isToken(_ text: Substring) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            byte > 0x20 && byte < 0x7F && !"()<>@,;:\\\"/[]?={}".utf8.contains(byte)
        }
    }
}
