import BridgeRPC
import NIOCore

/// One message queued for an agent's stdin, already encoded as a line.
struct OutgoingLine: Sendable {
    /// The id when the message is a request, so that a failed write can answer it with an error.
    let requestID: JSONRPCID?
    /// The message's JSON and its `\n`.
    let bytes: ByteBuffer

    /// Encodes `message` as one NDJSON line.
    init(_ message: JSONRPCMessage) {
        var utf8 = message.jsonUTF8
        utf8.append(0x0A)
        bytes = ByteBuffer(bytes: utf8)
        if case .request(let request) = message { requestID = request.id } else { requestID = nil }
    }
}
