public import BridgeTLS
import NIOCore
import NIOHTTP1
import NIOPosix

extension WebSocketConnector {
    /// The answer to ``request(_:url:pin:credential:headers:body:)``.
    public struct Answer: Sendable, Hashable {
        /// The HTTP status.
        public var status: Int
        /// The body (at most ``maxAnswerSize`` bytes are accepted).
        public var body: [UInt8]
        /// For `https://`: the pin of the certificate the bridge presented.
        public var certificatePin: CertificatePin?
        /// The answer's header fields, names in lower case (repeated fields joined with `, `).
        public var headers: [String: String] = [:]
    }

    /// The largest answer body ``request(_:url:pin:credential:headers:body:)`` accepts.
    public static let maxAnswerSize = 1 << 20

    /// One HTTP/1.1 request to the bridge with the same address handling and pin check as a WebSocket: the pairing
    /// exchange and refresh, which the bridge takes from another machine only over TLS.
    ///
    /// - Parameters:
    ///   - method: `GET`, `POST`, …
    ///   - url: `http://` or `https://`, the host as in ``Target``.
    ///   - pin: for `https://`, the pin to hold the bridge to; `nil` trusts the certificate (the answer says its pin).
    ///   - credential: sent as `Authorization: Bearer`, or bound to a key as `Authorization: DPoP` with a proof (tried
    ///     again with the bridge's nonce, or on its clock, as ``DPoPClientBinding/request(_:url:accessToken:using:pin:headers:body:)``
    ///     says).
    ///   - headers: more request header fields, sent as given.
    ///   - body: the request body (a `Content-Length` is sent with it).
    /// - Returns: the bridge's answer, whatever its status.
    /// - Throws: ``WebSocketConnectorError`` when no answer came (refused, timed out, another key than `pin`…).
    public func request(
        _ method: String, url: String, pin: CertificatePin? = nil, credential: BridgeCredential? = nil,
        headers: [String: String] = [:], body: [UInt8] = []
    ) async throws -> Answer {
        guard let credential else { return try await requestOnce(method, url: url, pin: pin, headers: headers, body: body) }
        guard let binding = credential.proofKey else {
            var sent = headers
            sent["Authorization"] = credential.authorization
            return try await requestOnce(method, url: url, pin: pin, headers: sent, body: body)
        }
        return try await binding.request(
            method, url: url, accessToken: credential.accessToken, using: self, pin: pin, headers: headers, body: body)
    }

    /// One request as it is given (see ``request(_:url:pin:credential:headers:body:)``).
    func requestOnce(
        _ method: String, url: String, pin: CertificatePin? = nil, headers: [String: String] = [:], body: [UInt8] = []
    ) async throws -> Answer {
        let target = try Target(url: url)
        let attempt = Attempt(target: target, pin: pin, timeout: timeout)
        let context = try attempt.tlsContext()
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method.uppercased()), uri: target.path)
        head.headers.add(name: "Host", value: target.authority)
        head.headers.add(name: "Connection", value: "close")
        if !body.isEmpty || head.method == .POST { head.headers.add(name: "Content-Length", value: "\(body.count)") }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head.headers.replaceOrAdd(name: name, value: value) }
        let request = head
        let initializer: @Sendable (any Channel) -> EventLoopFuture<NIOAsyncChannel<NIOHTTPClientResponseFull, HTTPClientRequestPart>> = { channel in
            channel.eventLoop.makeCompletedFuture {
                try attempt.addTLS(to: channel, context: context)
                try channel.pipeline.syncOperations.addHTTPClientHandlers()
                try channel.pipeline.syncOperations.addHandler(NIOHTTPClientResponseAggregator(maxContentLength: WebSocketConnector.maxAnswerSize))
                attempt.armDeadline(on: channel, until: channel.closeFuture)
                return try NIOAsyncChannel<NIOHTTPClientResponseFull, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
            }
        }
        let bootstrap = ClientBootstrap(group: group).connectTimeout(TimeAmount(timeout))
        do {
            let channel: NIOAsyncChannel<NIOHTTPClientResponseFull, HTTPClientRequestPart>
            if let address = try target.socketAddress() {
                channel = try await bootstrap.connect(to: address, channelInitializer: initializer)
            } else {
                channel = try await bootstrap.connect(host: target.host, port: target.port, channelInitializer: initializer)
            }
            let response = try await withTaskCancellationHandler {
                try await channel.executeThenClose { inbound, outbound async throws -> NIOHTTPClientResponseFull in
                    // One write: a server may answer and close as soon as it has the request line (openssl s_server
                    // -www does), and a part written after that failed with "I/O on closed channel" while the answer
                    // was already there.
                    var parts: [HTTPClientRequestPart] = [.head(request)]
                    if !body.isEmpty { parts.append(.body(.byteBuffer(ByteBuffer(bytes: body)))) }
                    parts.append(.end(nil))
                    try await outbound.write(contentsOf: parts)
                    for try await response in inbound { return response }
                    let error: any Error = WebSocketConnectorError.protocolViolation("the connection closed before an HTTP answer")
                    throw error
                }
            } onCancel: {
                channel.channel.close(promise: nil)
            }
            var fields: [String: String] = [:]
            for (name, value) in response.head.headers {
                let key = name.lowercased()
                fields[key] = fields[key].map { $0 + ", " + value } ?? value
            }
            return Answer(
                status: Int(response.head.status.code), body: response.body.map { Array($0.readableBytesView) } ?? [],
                certificatePin: attempt.seenPin, headers: fields)
        } catch {
            throw attempt.classify(error)
        }
    }
}
