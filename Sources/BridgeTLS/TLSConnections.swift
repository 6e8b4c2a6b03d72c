package import NIOCore
import Synchronization

/// Which of the bridge's open connections came in over TLS: the channel-level marker a request context reads.
///
/// ``TLSSniffer`` marks a connection when its first byte starts a TLS record, before any request on it is parsed;
/// the mark goes when the connection closes. Keyed by the channel object, so several bridges in one process (tests)
/// share it safely.
package final class TLSConnections: Sendable {
    /// The marks of every bridge in this process.
    package static let shared = TLSConnections()

    private let channels = Mutex<Set<ObjectIdentifier>>([])

    /// Marks `channel` as TLS until it closes.
    func mark(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        channels.withLock { _ = $0.insert(key) }
        channel.closeFuture.whenComplete { [self] _ in
            channels.withLock { _ = $0.remove(key) }
        }
    }

    /// Whether `channel` came in over TLS; an HTTP/2 stream's channel is judged by its connection (its parent).
    package func isTLS(_ channel: any Channel) -> Bool {
        let key = ObjectIdentifier(channel)
        let parent = channel.parent.map(ObjectIdentifier.init)
        return channels.withLock { $0.contains(key) || parent.map($0.contains) == true }
    }

    /// How many connections are marked (for tests: marks do not outlive their connections).
    package var count: Int { channels.withLock { $0.count } }
}
