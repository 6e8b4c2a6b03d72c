import NIOCore
import NIOHTTP2

/// Closes an HTTP/2 connection with no open stream at once when the server shuts down (``ChannelShouldQuiesceEvent``),
/// as ``ConnectionGuard`` does an HTTP/1.1 connection between requests (issue 25's finding F5b: idle connections held
/// the stop).
///
/// NIOHTTP2's connection manager, just before it in the pipeline, has sent `GOAWAY` by then; a connection with open
/// streams is left to it (its streams get their grace time, then it closes).
final class HTTP2QuiesceHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame

    private var openStreams = 0

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is NIOHTTP2StreamCreatedEvent:
            openStreams += 1
        case is StreamClosedEvent:
            openStreams = max(0, openStreams - 1)
        case is ChannelShouldQuiesceEvent where openStreams == 0:
            context.fireUserInboundEventTriggered(event)
            context.close(promise: nil)
            return
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }
}
