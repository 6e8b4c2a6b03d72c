import BridgeRPC
import Logging

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
    /// as one fails) and returns the first that opens a WebSocket and answers `initialize`. `token` is asked for each
    /// attempt, so a refreshed token is used when one expired meanwhile. A second attempt that also answers is closed.
    /// With ``BridgeSessionOptions/pin`` every candidate is reached over `wss://` and held to that pin.
    /// - Throws: ``BridgeClientError`` (`noCandidates`, `noEndpointReachable`, or what `token` throws).
    public static func open(
        _ candidates: [BridgeEndpoint], options: BridgeSessionOptions,
        token: @escaping @Sendable () async throws -> String?, logger: Logger
    ) async throws -> BridgeConnection {
        let race = HappyEyeballs(attemptDelay: options.attemptDelay)
        // The bridge serves TLS and plaintext on one port: a client that holds the pin always speaks TLS.
        let reachable = options.pin == nil ? candidates : candidates.map(\.overTLS)
        let (endpoint, opened, attempts) = try await race.race(reachable, attempt: { endpoint in
            let connection = try await BridgeRPCClient.connect(
                to: endpoint.url, token: try await token(), pin: options.pin, timeout: options.connectTimeout,
                pingInterval: options.pingInterval, logger: logger)
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
        return BridgeConnection(endpoint: endpoint, client: opened.0, initialize: opened.1, attempts: attempts)
    }
}
