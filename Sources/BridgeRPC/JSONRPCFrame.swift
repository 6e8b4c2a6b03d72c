/// One text frame read as JSON-RPC 2.0: a single message or a batch, each element either a valid message
/// or the error it must be answered with (classified exactly as the JSON-RPC 2.0 specification says).
public enum JSONRPCFrame: Sendable, Hashable {
    /// One element. Unparseable text and an empty batch also land here, as an invalid element with a `null` id.
    case single(Element)
    /// A non-empty batch; each element is judged on its own.
    case batch([Element])

    /// One element of a frame.
    public enum Element: Sendable, Hashable {
        /// A valid message.
        case message(JSONRPCMessage)
        /// Not a valid message: answer `error` with `id` (`null` when the id itself could not be read).
        case invalid(id: JSONRPCID, error: JSONRPCError)

        /// The error response to send for an invalid element, `nil` for a valid one.
        public var errorResponse: JSONRPCMessage? {
            if case .invalid(let id, let error) = self { return .response(JSONRPCResponse(id: id, error: error)) }
            return nil
        }
    }

    /// Reads `text` as a frame.
    ///
    /// Never throws: what is wrong becomes an invalid element.
    public init(parsing text: String) {
        self.init(parsedBy: { () throws(JSONParseError) in try JSONValue(parsing: text) })
    }

    /// Reads UTF-8 bytes as a frame, as ``init(parsing:)`` reads text.
    ///
    /// Never throws. A single notification whose params is an object keeps their bytes
    /// (``JSONRPCNotification/rawParams``), so a relay need not encode them again.
    public init(parsingUTF8 bytes: [UInt8]) {
        var parser = JSONParser(bytes: bytes)
        self.init(parsedBy: { () throws(JSONParseError) in try parser.parseDocument() })
        guard case .single(.message(.notification(let notification))) = self, let span = parser.paramsSpan else { return }
        let raw = JSONRawParams(message: bytes, span: span, repeatedKey: parser.repeatedKey)
        self = .single(.message(.notification(JSONRPCNotification(method: notification.method, params: notification.params, rawParams: raw))))
    }

    /// The frame of what `parse` returns, or a parse-error element where it throws.
    private init(parsedBy parse: () throws(JSONParseError) -> JSONValue) {
        let value: JSONValue
        do {
            value = try parse()
        } catch {
            self = .single(.invalid(id: .null, error: .parseError(error.message, data: ["offset": .int(Int64(error.offset))])))
            return
        }
        self.init(value: value)
    }

    /// Reads an already parsed JSON value as a frame.
    public init(value: JSONValue) {
        if case .array(let elements) = value {
            if elements.isEmpty {
                self = .single(.invalid(id: .null, error: .invalidRequest("empty batch")))
            } else {
                self = .batch(elements.map(JSONRPCFrame.classify))
            }
        } else {
            self = .single(JSONRPCFrame.classify(value))
        }
    }

    /// Judges one JSON value as a request, notification or response.
    public static func classify(_ value: JSONValue) -> Element {
        guard case .object(let members) = value else {
            return .invalid(id: .null, error: .invalidRequest("expected a JSON object, got \(value.typeName)"))
        }
        // The id first, so that every later error can echo it.
        var id: JSONRPCID?
        if let rawID = members["id"] {
            guard let parsed = JSONRPCID(rawID) else {
                return .invalid(id: .null, error: .invalidRequest("id must be a string, a number or null, got \(rawID.typeName)"))
            }
            id = parsed
        }
        let echoID = id ?? .null
        guard let version = members["jsonrpc"] else {
            return .invalid(id: echoID, error: .invalidRequest("missing \"jsonrpc\": \"2.0\""))
        }
        guard version == .string("2.0") else {
            return .invalid(id: echoID, error: .invalidRequest("\"jsonrpc\" must be \"2.0\", got \(version.jsonText)"))
        }
        if let method = members["method"] {
            guard case .string(let name) = method else {
                return .invalid(id: echoID, error: .invalidRequest("\"method\" must be a string, got \(method.typeName)"))
            }
            if members["result"] != nil || members["error"] != nil {
                return .invalid(id: echoID, error: .invalidRequest("a request must not carry \"result\" or \"error\""))
            }
            let params = members["params"]
            if let params {
                switch params {
                case .object, .array: break
                default:
                    return .invalid(id: echoID, error: .invalidRequest("\"params\" must be an object or an array, got \(params.typeName)"))
                }
            }
            if let id {
                return .message(.request(JSONRPCRequest(id: id, method: name, params: params)))
            }
            return .message(.notification(JSONRPCNotification(method: name, params: params)))
        }
        // No method: it can only be a response.
        let result = members["result"]
        let errorValue = members["error"]
        switch (result, errorValue) {
        case (nil, nil):
            return .invalid(id: echoID, error: .invalidRequest("missing \"method\""))
        case (.some, .some):
            return .invalid(id: echoID, error: .invalidRequest("a response must not carry both \"result\" and \"error\""))
        case (.some(let value), nil):
            guard let id else { return .invalid(id: .null, error: .invalidRequest("a response needs an \"id\"")) }
            return .message(.response(JSONRPCResponse(id: id, result: value)))
        case (nil, .some(let value)):
            guard let id else { return .invalid(id: .null, error: .invalidRequest("a response needs an \"id\"")) }
            guard let error = JSONRPCError(value) else {
                return .invalid(id: id, error: .invalidRequest("\"error\" must be an object with an integer \"code\" and a string \"message\""))
            }
            return .message(.response(JSONRPCResponse(id: id, error: error)))
        }
    }
}
