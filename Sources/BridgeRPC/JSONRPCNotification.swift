/// A JSON-RPC 2.0 notification: a call without an id, which never gets a response.
///
/// Equality and hashing look at the method and the params only, not at ``rawParams``.
public struct JSONRPCNotification: Sendable, Hashable {
    /// The method name.
    public var method: String
    /// The parameters: an object or an array, or absent. Changing them forgets ``rawParams``.
    public var params: JSONValue? {
        didSet { rawParams = nil }
    }
    /// The bytes `params` was read from, when the notification was parsed from bytes (a line of an agent) and its
    /// params is an object; `nil` otherwise, and once ``params`` is changed.
    public private(set) var rawParams: JSONRawParams?

    /// Creates a notification.
    public init(method: String, params: JSONValue? = nil) {
        self.method = method
        self.params = params
        self.rawParams = nil
    }

    /// A parsed notification with the bytes of its params.
    init(method: String, params: JSONValue?, rawParams: JSONRawParams?) {
        self.method = method
        self.params = params
        self.rawParams = rawParams
    }

    public static func == (lhs: JSONRPCNotification, rhs: JSONRPCNotification) -> Bool {
        lhs.method == rhs.method && lhs.params == rhs.params
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(params)
    }
}
