import NIOCore

/// The NIO side of ``LineFramer``: turns the bytes of an agent's pipe into ``AgentLine``s.
struct AgentLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = AgentLine

    private var framer: LineFramer

    /// A decoder that drops lines longer than `maxLineLength` bytes.
    init(maxLineLength: Int) {
        framer = LineFramer(maxLineLength: maxLineLength)
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let line = framer.next(&buffer) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(line))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        guard let line = framer.finish(&buffer) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(line))
        return .continue
    }
}
