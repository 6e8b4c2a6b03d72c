/// A JSON-RPC 2.0 notification: a call without an id, which never gets a response.
public struct JSONRPCNotification: Sendable, Hashable {
    /// The method name.
    public var method: String
    /// The parameters: an object or an array, or absent.
    public var params: JSONValue?

    /// Creates a notification.
    public init(method: String, params: JSONValue? = nil) {
        self.method = method
        self.params = params
    }
}
