/// A JSON-RPC 2.0 request: a call that expects a response carrying the same id.
public struct JSONRPCRequest: Sendable, Hashable {
    /// The id the response must carry.
    public var id: JSONRPCID
    /// The method name.
    public var method: String
    /// The parameters: an object or an array, or absent.
    public var params: JSONValue?

    /// Creates a request.
    public init(id: JSONRPCID, method: String, params: JSONValue? = nil) {
        self.id = id
        self.method = method
        self.params = params
    }
}
