/// A JSON-RPC 2.0 error object (`code`, `message`, optional `data`).
///
/// Also thrown as a Swift error.
public struct JSONRPCError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The error code; see the static constants for the standard ones.
    public var code: Int
    /// A short description of the error.
    public var message: String
    /// More detail, for people and programs.
    public var data: JSONValue?

    /// Creates an error object.
    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// -32700: the text is not valid JSON.
    public static let parseErrorCode = -32700
    /// -32600: the JSON is not a valid request object.
    public static let invalidRequestCode = -32600
    /// -32601: the method does not exist or is not available.
    public static let methodNotFoundCode = -32601
    /// -32602: invalid method parameters.
    public static let invalidParamsCode = -32602
    /// -32603: internal error.
    public static let internalErrorCode = -32603

    /// A -32700 parse error.
    public static func parseError(_ detail: String, data: JSONValue? = nil) -> JSONRPCError {
        JSONRPCError(code: parseErrorCode, message: "Parse error: \(detail)", data: data)
    }

    /// A -32600 invalid request error.
    public static func invalidRequest(_ detail: String, data: JSONValue? = nil) -> JSONRPCError {
        JSONRPCError(code: invalidRequestCode, message: "Invalid Request: \(detail)", data: data)
    }

    /// A -32601 method not found error naming the method.
    public static func methodNotFound(_ method: String, detail: String? = nil) -> JSONRPCError {
        var message = "Method not found: \(method)"
        if let detail { message += " (\(detail))" }
        return JSONRPCError(code: methodNotFoundCode, message: message, data: ["method": .string(method)])
    }

    /// A -32602 invalid params error.
    public static func invalidParams(_ detail: String, data: JSONValue? = nil) -> JSONRPCError {
        JSONRPCError(code: invalidParamsCode, message: "Invalid params: \(detail)", data: data)
    }

    /// A -32603 internal error.
    public static func internalError(_ detail: String, data: JSONValue? = nil) -> JSONRPCError {
        JSONRPCError(code: internalErrorCode, message: "Internal error: \(detail)", data: data)
    }

    /// The error object as JSON.
    public var jsonValue: JSONValue {
        var members: [String: JSONValue] = ["code": .int(Int64(code)), "message": .string(message)]
        if let data { members["data"] = data }
        return .object(members)
    }

    /// Reads an error object; `nil` if `value` has no integer `code` and string `message`.
    public init?(_ value: JSONValue) {
        guard let code = value["code"]?.intValue, let message = value["message"]?.stringValue else { return nil }
        self.init(code: Int(code), message: message, data: value["data"])
    }

    /// "message (code)".
    public var description: String { "\(message) (\(code))" }
}
