import BridgeACP
import BridgeRPC
import NIOCore

/// A `session/update` frame for official (ACP v1) clients made from the agent's own bytes of its params, with
/// `_meta.seq` spliced in as their first member: `{"jsonrpc":"2.0","method":"session/update","params":{"_meta":{"seq":N},…}}`,
/// the agent's members following as it wrote them.
///
/// It says what the encoding of the stamped params says (the same envelope, the same JSON value) without encoding them again:
/// only for params that have no `_meta` and whose bytes are ``JSONRawParams/isForwardable``.
enum SplicedUpdate {
    /// `{"jsonrpc":"2.0","method":"session/update","params":`, as ``JSONRPCMessage/jsonUTF8`` writes the envelope.
    static let sessionUpdatePrefix: [UInt8] = {
        var envelope = JSONRPCMessage.notification(JSONRPCNotification(method: ACPMethod.sessionUpdate)).jsonUTF8
        envelope.removeLast()  // its `}`
        envelope.append(contentsOf: #","params":"#.utf8)
        return envelope
    }()

    /// The frame of a `session/update` stamped with `seq`, and how many bytes its params take in it.
    static func frame(seq: Int64, params raw: JSONRawParams) -> (frame: ByteBuffer, paramsBytes: Int) {
        let prefix = sessionUpdatePrefix
        var buffer = ByteBufferAllocator().buffer(capacity: prefix.count + raw.count + 32)
        buffer.writeBytes(prefix)
        let paramsStart = buffer.writerIndex
        buffer.writeStaticString(#"{"_meta":{"seq":"#)
        buffer.writeString(String(seq))
        buffer.writeStaticString("}")
        raw.withUnsafeBytes { bytes in
            // `bytes` runs from the object's `{` to its `}`; an empty object (maybe with whitespace) takes no comma.
            var first = 1
            while first < bytes.count, bytes[first] == 0x20 || bytes[first] == 0x09 || bytes[first] == 0x0A || bytes[first] == 0x0D {
                first += 1
            }
            if first < bytes.count, bytes[first] == UInt8(ascii: "}") {
                buffer.writeStaticString("}")
            } else {
                buffer.writeStaticString(",")
                buffer.writeBytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[first...])))
            }
        }
        let paramsBytes = buffer.writerIndex - paramsStart
        buffer.writeStaticString("}")
        return (buffer, paramsBytes)
    }
}
