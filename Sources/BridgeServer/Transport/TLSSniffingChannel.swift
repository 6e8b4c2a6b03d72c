import BridgeTLS
import HummingbirdCore
import Logging
import NIOCore

/// A child channel that serves TLS and plaintext on one listening socket: ``TLSSniffer`` goes first in the pipeline,
/// in front of everything `Base` sets up (so that the refusal rewriter and the flush coalescer work on plaintext, and
/// TLS sits between them and the socket).
struct TLSSniffingChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    /// The HTTP (and WebSocket) channel behind TLS.
    let base: Base
    /// The TLS context; `nil` serves plaintext only, with no sniffer in the pipeline.
    let tls: TLSServerContext?
    /// How long a new connection may stay silent, and a TLS handshake take, before the connection is closed.
    let timeout: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let setup = base.setup(channel: channel, logger: logger)
        guard let tls else { return setup }
        // The child channel reads nothing before its initializer's future completes, so the sniffer still sees the
        // first byte when it is added after the base's handlers (which put theirs first too).
        return setup.flatMapThrowing { value in
            // ALPN `h2` only where HTTP/2 is served (not to a refused connection, nor one on probation).
            let offersHTTP2 = (value as? BridgeChildChannel.Value)?.offersHTTP2 ?? false
            let context = offersHTTP2 ? tls.sslContext : tls.http1Context
            let sniffer = TLSSniffer(sslContext: context, timeout: timeout, logger: logger)
            try channel.pipeline.syncOperations.addHandler(sniffer, position: .first)
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
