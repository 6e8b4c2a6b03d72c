public import BridgeRPC
import BridgeTLS
public import Logging
import Synchronization

/// A bridge that answered `initialize`: the endpoint that won the race, the client on it, the answer, and every
/// attempt of the race.
public struct BridgeConnection: Sendable {
    /// The endpoint that answered first.
    public let endpoint: BridgeEndpoint
    /// The client on that connection.
    public let client: BridgeAgentClient
    /// The `initialize` result.
    public let initialize: JSONValue
    /// Every attempt of the race, with its start, duration and outcome.
    public let attempts: [HappyEyeballs.Attempt]

    /// The directory the bridge serves (`_meta.workingDirectory` of `initialize`), the default for new sessions.
    public var workingDirectory: String? {
        initialize["_meta"]?["workingDirectory"]?.stringValue ?? initialize["_meta"]?["working_directory"]?.stringValue
    }

    /// The agent's title (or name) from `initialize`'s `agentInfo`.
    public var agentTitle: String? {
        initialize["agentInfo"]?["title"]?.stringValue ?? initialize["agentInfo"]?["name"]?.stringValue
    }

    /// Races `candidates` (Happy Eyeballs: best first, the next after ``BridgeSessionOptions/attemptDelay`` or as soon
    /// as one fails) and returns the first that opens a WebSocket and answers `initialize`.
    ///
    /// `credential` is asked for each attempt, so a refreshed token is used when one expired meanwhile. A second attempt
    /// that also answers is closed. With ``BridgeSessionOptions/pin`` every candidate is reached over `wss://` and held to
    /// that pin.
    ///
    /// A bridge that refuses the access token as expired (`403 token_expired`) before this client's copy of its expiry
    /// (the clocks apart) gets one more try with the credential `refresh` returns (the tokens rotated; one refresh
    /// for the whole race); only when the refresh is refused, or the new token too, is that "needs pairing".
    /// - Throws: ``BridgeClientError`` (`noCandidates`, `needsPairing` when a bridge answered 401/403 and none answered,
    ///   `noEndpointReachable`, or what `credential` throws).
    public static func open(
        _ candidates: [BridgeEndpoint], options: BridgeSessionOptions,
        credential: @escaping @Sendable () async throws -> BridgeCredential?,
        refresh: (@Sendable () async throws -> BridgeCredential?)? = nil, logger: Logger
    ) async throws -> BridgeConnection {
        let race = HappyEyeballs(attemptDelay: options.attemptDelay)
        let reachable = BridgeConnection.distinct(candidates, pin: options.pin)
        // A bridge that answered 401/403 is there: that is "needs pairing", not "no address answered".
        let refused = FirstRefusal()
        let oneRefresh = OneRefresh.of(refresh)
        let raced: (endpoint: BridgeEndpoint, value: (BridgeAgentClient, JSONValue), attempts: [HappyEyeballs.Attempt])
        do {
            raced = try await race.race(reachable, attempt: { endpoint in
                let connection: BridgeRPCClient
                do {
                    connection = try await BridgeConnection.connect(
                        endpoint, credential: try await credential(), refreshed: oneRefresh, options: options, logger: logger)
                } catch BridgeClientError.unauthorized(let why) {
                    refused.record(address: endpoint.url, detail: why)
                    throw BridgeClientError.unauthorized(why)
                }
                let client = BridgeAgentClient(connection: connection)
                do {
                    let answer = try await client.initialize(clientName: options.clientName, timeout: options.initializeTimeout)
                    return (client, answer)
                } catch {
                    connection.close()
                    throw error
                }
            }, closeLoser: { loser in
                // Two attempts can answer at once: the one that lost the race is closed, never left open.
                loser.0.connection.close()
            })
        } catch .noEndpointReachable(let attempts) {
            if let (address, detail) = refused.first { throw BridgeClientError.needsPairing(address: address, detail: detail) }
            throw BridgeClientError.noEndpointReachable(attempts)
        }
        return BridgeConnection(endpoint: raced.endpoint, client: raced.value.0, initialize: raced.value.1, attempts: raced.attempts)
    }

    /// Opens the WebSocket to `endpoint` with `credential`; a `403 token_expired` gets one more try with the credential
    /// `refreshed` gives (``OneRefresh/connecting(_:credential:address:logger:_:)``).
    private static func connect(
        _ endpoint: BridgeEndpoint, credential: BridgeCredential?, refreshed: OneRefresh?, options: BridgeSessionOptions, logger: Logger
    ) async throws -> BridgeRPCClient {
        try await OneRefresh.connecting(refreshed, credential: credential, address: endpoint.url, logger: logger) { credential in
            try await BridgeRPCClient.connect(
                to: endpoint.url, credential: credential, pin: options.pin, timeout: options.connectTimeout,
                pingInterval: options.pingInterval, logger: logger)
        }
    }

    /// The candidates as they are dialled, each URL once: with a pin every one over `wss://` (the bridge serves TLS and
    /// plaintext on one port, and a client that holds the pin always speaks TLS), so `ws://A` and `wss://A` are one.
    static func distinct(_ candidates: [BridgeEndpoint], pin: CertificatePin?) -> [BridgeEndpoint] {
        var seen = Set<String>()
        return (pin == nil ? candidates : candidates.map(\.overTLS)).filter { seen.insert($0.url).inserted }
    }
}

/// The first address that refused this client's credentials during a race.
private final class FirstRefusal: Sendable {
    private let value = Mutex<(address: String, detail: String)?>(nil)

    func record(address: String, detail: String) {
        value.withLock { $0 = $0 ?? (address, detail) }
    }

    var first: (address: String, detail: String)? { value.withLock { $0 } }
}
