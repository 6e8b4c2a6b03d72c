/// A JSON-RPC 2.0 response: either a result or an error, for the request with the same id.
public struct JSONRPCResponse: Sendable, Hashable {
    /// The id of the request this answers (`null` when that id could not be read).
    public var id: JSONRPCID
    /// The result, or the error.
    public var outcome: Result<JSONValue, JSONRPCError>

    /// Creates a response.
    public init(id: JSONRPCID, outcome: Result<JSONValue, JSONRPCError>) {
        self.id = id
        self.outcome = outcome
    }

    /// A success response.
    public init(id: JSONRPCID, result: JSONValue) {
        self.init(id: id, outcome: .success(result))
    }

    /// An error response.
    public init(id: JSONRPCID, error: JSONRPCError) {
        self.init(id: id, outcome: .failure(error))
    }

    /// The result, if this is a success.
    public var result: JSONValue? {
        if case .success(let value) = outcome { return value }
        return nil
    }

    /// The error, if this is a failure.
    public var error: JSONRPCError? {
        if case .failure(let value) = outcome { return value }
        return nil
    }
}
