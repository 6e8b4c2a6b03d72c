/// Any one JSON-RPC 2.0 message.
public enum JSONRPCMessage: Sendable, Hashable {
    /// A call expecting a response.
    case request(JSONRPCRequest)
    /// A call without response.
    case notification(JSONRPCNotification)
    /// An answer to a request.
    case response(JSONRPCResponse)

    /// The method, for requests and notifications.
    public var method: String? {
        switch self {
        case .request(let request): return request.method
        case .notification(let notification): return notification.method
        case .response: return nil
        }
    }

    /// The params, for requests and notifications.
    public var params: JSONValue? {
        switch self {
        case .request(let request): return request.params
        case .notification(let notification): return notification.params
        case .response: return nil
        }
    }

    /// The message as a JSON object with `"jsonrpc":"2.0"`.
    public var jsonValue: JSONValue {
        var members: [String: JSONValue] = ["jsonrpc": "2.0"]
        switch self {
        case .request(let request):
            members["id"] = request.id.jsonValue
            members["method"] = .string(request.method)
            if let params = request.params { members["params"] = params }
        case .notification(let notification):
            members["method"] = .string(notification.method)
            if let params = notification.params { members["params"] = params }
        case .response(let response):
            members["id"] = response.id.jsonValue
            switch response.outcome {
            case .success(let result): members["result"] = result
            case .failure(let error): members["error"] = error.jsonValue
            }
        }
        return .object(members)
    }

    /// Compact JSON text, envelope fields first in the conventional order
    /// (`jsonrpc`, `id`, `method`, `params`, `result`, `error`), nested object keys sorted.
    public var jsonText: String {
        String(decoding: jsonUTF8, as: UTF8.self)
    }

    /// ``jsonText`` as UTF-8 bytes, without making a `String` first.
    public var jsonUTF8: [UInt8] {
        var writer = JSONWriter()
        var members: [(String, JSONValue)] = [("jsonrpc", "2.0")]
        switch self {
        case .request(let request):
            members.append(("id", request.id.jsonValue))
            members.append(("method", .string(request.method)))
            if let params = request.params { members.append(("params", params)) }
        case .notification(let notification):
            members.append(("method", .string(notification.method)))
            if let params = notification.params { members.append(("params", params)) }
        case .response(let response):
            members.append(("id", response.id.jsonValue))
            switch response.outcome {
            case .success(let result): members.append(("result", result))
            case .failure(let error): members.append(("error", error.jsonValue))
            }
        }
        writer.writeOrderedObject(members)
        return writer.bytes
    }

    /// Compact JSON text of several messages as one batch array.
    public static func batchText(_ messages: [JSONRPCMessage]) -> String {
        "[" + messages.map(\.jsonText).joined(separator: ",") + "]"
    }

    /// Parses a single message (no batch) from text, or says why it is not one.
    public init(parsing text: String) throws(JSONRPCError) {
        switch JSONRPCFrame(parsing: text) {
        case .single(.message(let message)): self = message
        case .single(.invalid(_, let error)): throw error
        case .batch: throw JSONRPCError.invalidRequest("expected one message, got a batch")
        }
    }
}
