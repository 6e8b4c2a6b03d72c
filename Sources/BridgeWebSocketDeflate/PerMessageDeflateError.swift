/// Why permessage-deflate failed on a connection.
public enum PerMessageDeflateError: Error, Sendable, Equatable {
    /// An inflated message would exceed the connection's message limit (a WebSocket closes it with 1009).
    case messageTooLarge(limit: Int)
    /// A compressed message's data is not a valid deflate stream (a WebSocket closes it with 1007).
    case invalidCompressedData
    /// zlib could not set up or run a stream (out of memory).
    case zlibFailure(String)
    /// The server's `Sec-WebSocket-Extensions` answer is not one this client offered or allows (RFC 7692 §5: the client
    /// fails the connection).
    case invalidResponse(String)
}

extension PerMessageDeflateError: CustomStringConvertible {
    /// A sentence for logs and close reasons.
    public var description: String {
        switch self {
        case .messageTooLarge(let limit): "a compressed message inflates to more than \(limit) bytes"
        case .invalidCompressedData: "invalid compressed data"
        case .zlibFailure(let reason): "zlib failed: \(reason)"
        case .invalidResponse(let reason): "the server's permessage-deflate answer is not valid: \(reason)"
        }
    }
}
