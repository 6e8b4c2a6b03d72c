import NIOCore

/// The NIO side of ``LineFramer``: turns the bytes of an agent's pipe into ``AgentLine``s, all the lines completed by
/// one read passed on together (in order), so that their reader takes one element per read rather than one per line.
struct AgentLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = [AgentLine]

    private var framer: LineFramer

    /// A decoder that drops lines longer than `maxLineLength` bytes.
    init(maxLineLength: Int) {
        framer = LineFramer(maxLineLength: maxLineLength)
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let lines = framer.lines(&buffer)
        if !lines.isEmpty { context.fireChannelRead(Self.wrapInboundOut(lines)) }
        // Everything complete was taken: the rest needs more bytes.
        return .needMoreData
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        let lines = framer.finishLines(&buffer)
        if !lines.isEmpty { context.fireChannelRead(Self.wrapInboundOut(lines)) }
        return .needMoreData
    }
}
