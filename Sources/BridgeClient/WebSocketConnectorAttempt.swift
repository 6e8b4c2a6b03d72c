import BridgeTLS
import BridgeWebSocketDeflate
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension WebSocketConnector {
    /// One connection attempt: sets up the channel (TLS with the pin check, the HTTP upgrade, a deadline), remembers
    /// what it saw, and turns what went wrong into a ``WebSocketConnectorError``.
    final class Attempt: Sendable {
        let target: Target
        let expectedPin: CertificatePin?
        let timeout: Duration
        private let observed = Mutex(Observed())

        private struct Observed {
            var timedOut = false
            var certificateSeen = false
            var seenPin: CertificatePin?
        }

        init(target: Target, pin: CertificatePin?, timeout: Duration) {
            self.target = target
            self.expectedPin = pin
            self.timeout = timeout
        }

        /// The pin of the certificate the peer presented, once the TLS handshake got that far.
        var seenPin: CertificatePin? { observed.withLock { $0.seenPin } }

        /// The TLS context for `wss://`: TLS 1.2 or later, the peer checked only by the pin (a bridge's certificate is
        /// self-signed: no certificate authority vouches for it, the pin from the QR code does).
        func tlsContext() throws(WebSocketConnectorError) -> NIOSSLContext? {
            guard target.isSecure else { return nil }
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.minimumTLSVersion = .tlsv12
            // The chain is checked by the pin in ``verify(_:)`` (NIOSSL calls it with verification on), never by name:
            // `.fullVerification` would also match the peer's address against the certificate's names, which fails for
            // every address the certificate does not list (a link-local `fe80::…%eth0`, a second loopback address, a
            // new DHCP lease) although the key is the pinned one. The pin is the bridge's identity.
            configuration.certificateVerification = .noHostnameVerification
            // The verification callback replaces BoringSSL's chain check, so the system's trust roots would never be
            // read; loading them cost about 5 ms of CPU per connection attempt (`bench tlscontext`).
            configuration.trustRoots = .certificates([])
            do {
                return try NIOSSLContext(configuration: configuration)
            } catch {
                throw .notTLS(address: target.displayAddress, reason: "TLS is not available on this device: \(error)")
            }
        }

        /// Adds TLS (for `wss://`), the HTTP client with the WebSocket upgrader, and the deadline to `channel`.
        func configure(channel: any Channel, tls: NIOSSLContext?, request: HTTPRequestHead, maxFrameSize: Int) throws -> Pending {
            try addTLS(to: channel, context: tls)
            let upgrader = NIOTypedWebSocketClientUpgrader<UpgradeResult>(
                maxFrameSize: maxFrameSize, enableAutomaticErrorHandling: true
            ) { channel, response in
                channel.eventLoop.makeCompletedFuture {
                    // permessage-deflate when the bridge took the offer (an answer the offer did not allow fails the
                    // upgrade, RFC 7692 §5).
                    let offerAnswer = response.headers[PerMessageDeflateNegotiation.headerName]
                    if let deflate = try PerMessageDeflateNegotiation.clientAccept(response: offerAnswer) {
                        let handler = PerMessageDeflateClientHandler(parameters: deflate, maxMessageSize: maxFrameSize)
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    return .upgraded(try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(wrappingChannelSynchronously: channel))
                }
            }
            let upgrade = NIOTypedHTTPClientUpgradeConfiguration<UpgradeResult>(
                upgradeRequestHead: request, upgraders: [upgrader]
            ) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let promise = channel.eventLoop.makePromise(of: Refusal.self)
                    try channel.pipeline.syncOperations.addHandler(RefusalCollector(promise: promise))
                    return .refused(promise.futureResult)
                }
            }
            var configuration = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: upgrade)
            configuration.leftOverBytesStrategy = .forwardBytes  // frames that came with the 101 belong to the WebSocket
            let result = try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: configuration)
            // One deadline for TCP, TLS, the upgrade and a refusal's body.
            armDeadline(on: channel, until: result.flatMap { outcome -> EventLoopFuture<Void> in
                switch outcome {
                case .upgraded: return channel.eventLoop.makeSucceededVoidFuture()
                case .refused(let refusal): return refusal.map { _ in }
                }
            })
            return Pending(channel: channel, upgrade: result)
        }

        /// For `wss://` (`https://`): TLS first in the pipeline, the peer checked by ``verify(_:)``.
        func addTLS(to channel: any Channel, context: NIOSSLContext?) throws {
            guard let context else { return }
            // No SNI: the bridge is identified by its pin, never by name. A bridge on a tailnet presents the MagicDNS
            // name's CA certificate to clients that name it (browsers, issue 11 item 6); without SNI it presents its
            // own identity, so the pin from pairing matches whether the phone uses the address or the tailnet name.
            let handler = try NIOSSLClientHandler(context: context, serverHostname: nil) { [self] certificates, promise in
                promise.succeed(self.verify(certificates))
            }
            try channel.pipeline.syncOperations.addHandler(handler)
        }

        /// Closes `channel` when ``timeout`` passes before `settled` completes (or the channel closes).
        func armDeadline(on channel: any Channel, until settled: EventLoopFuture<Void>) {
            let deadline = channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) { [self] in
                observed.withLock { $0.timedOut = true }
                channel.close(promise: nil)
            }
            settled.whenComplete { _ in deadline.cancel() }
            channel.closeFuture.whenComplete { _ in deadline.cancel() }
        }

        /// The pin check, on the event loop during the handshake.
        private func verify(_ certificates: [NIOSSLCertificate]) -> NIOSSLVerificationResult {
            guard let leaf = certificates.first, let der = try? leaf.toDERBytes(), let pin = try? CertificatePin(certificateDER: der) else {
                observed.withLock { $0.certificateSeen = true }
                return .failed
            }
            observed.withLock {
                $0.certificateSeen = true
                $0.seenPin = pin
            }
            if let expectedPin, expectedPin != pin { return .failed }
            return .certificateVerified
        }

        /// What went wrong, as a typed error.
        func classify(_ error: any Error) -> WebSocketConnectorError {
            let seen = observed.withLock { $0 }
            let address = target.displayAddress
            if seen.timedOut { return .timedOut(address: address, after: timeout) }
            if let expectedPin, let pin = seen.seenPin, pin != expectedPin { return .pinMismatch(expected: expectedPin, seen: pin) }
            if let error = error as? WebSocketConnectorError { return error }
            if let error = error as? ChannelError, case .connectTimeout = error { return .timedOut(address: address, after: timeout) }
            if let error = error as? IOError { return Attempt.classify(errno: error.errnoCode, address: address, error: error) }
            if let error = error as? NIOConnectionError {
                let causes = error.connectionErrors.compactMap { ($0.error as? IOError)?.errnoCode }
                if !causes.isEmpty && causes.allSatisfy({ $0 == ECONNREFUSED }) { return .refused(address: address) }
                if error.connectionErrors.isEmpty {
                    return .unreachable(address: address, reason: "cannot resolve the name '\(target.host)'")
                }
                let timedOut = error.connectionErrors.contains { attempt in
                    guard case .connectTimeout? = attempt.error as? ChannelError else { return false }
                    return true
                }
                if timedOut {
                    return .timedOut(address: address, after: timeout)
                }
                return .unreachable(address: address, reason: "\(error)")
            }
            if target.isSecure && !seen.certificateSeen && (error is NIOSSLError || error is BoringSSLError) {
                return .notTLS(address: address, reason: "\(error)")
            }
            if target.isSecure && seen.certificateSeen
                && (error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError) {
                // The peer spoke TLS and showed a certificate, and the handshake still failed: a certificate problem,
                // not the network's.
                return .certificateRejected(address: address, pin: seen.seenPin, reason: "\(error)")
            }
            if error is NIOWebSocketUpgradeError || error is NIOHTTPClientUpgradeError || error is HTTPParserError {
                return .protocolViolation("the answer to the upgrade is not a WebSocket handshake (\(error))")
            }
            if target.isSecure && !seen.certificateSeen {
                return .notTLS(address: address, reason: "the connection closed during the TLS handshake (\(error))")
            }
            return .unreachable(address: address, reason: "the connection closed before the WebSocket opened (\(error))")
        }

        static func classify(errno code: CInt, address: String, error: IOError) -> WebSocketConnectorError {
            switch code {
            case ECONNREFUSED: return .refused(address: address)
            case ETIMEDOUT: return .unreachable(address: address, reason: "the connection timed out")
            case EHOSTUNREACH, ENETUNREACH: return .unreachable(address: address, reason: "no route to it (\(error.description))")
            case EADDRNOTAVAIL, EAFNOSUPPORT: return .unreachable(address: address, reason: "this device has no address of that family (\(error.description))")
            default: return .unreachable(address: address, reason: error.description)
            }
        }
    }
}
