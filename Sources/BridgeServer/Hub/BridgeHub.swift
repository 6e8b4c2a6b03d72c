import BridgeACP
import BridgePairing
import BridgeRPC
import BridgeSessionStore
import BridgeTerminal
import BridgeTime
import BridgeWorkspace
import Foundation
import Logging
import Metrics
import NIOWebSocket

/// The bridge's shared state: connected clients, the agent, sessions and in-flight requests.
///
/// Every client request forwarded to the agent gets a fresh integer id (so ids of different clients never
/// collide on the agent side); the agent's answer is routed back with the client's own id, in its dialect.
/// Everything the agent sends is handled in order, so a prompt's answer never overtakes its updates.
actor BridgeHub {
    let configuration: BridgeServerConfiguration
    let logger: Logger
    /// The bridge's working directory; sessions live inside it.
    let workspace: WorkspaceFiles
    /// Agents to run and watch; consumed by ``run()``.
    nonisolated let launches: AsyncStream<LaunchedAgent>
    let launchSink: AsyncStream<LaunchedAgent>.Continuation
    /// Work handed to the hub by code that cannot await (``post(_:)``); run by ``run()``'s group, in order.
    nonisolated let errands: AsyncStream<HubErrand>
    let errandSink: AsyncStream<HubErrand>.Continuation

    /// The connected clients, and what each authenticated as.
    var connections = ConnectionTable()
    /// The agent: where it is in its life, its generation, who waits for it to start.
    var agentLink = AgentLink()
    /// The requests sent to the agent that wait for its answer, and where each answer goes.
    var routes = RouteTable()
    /// The sessions: created, loaded dormant, restored, their updates numbered and kept, dropped past retention; the
    /// notifications of sessions being created, the retention drops remembered, the restores under way.
    var sessions: SessionTable
    /// The agent's requests waiting for a client's answer; a change may move the orphaned-request sweep's timer.
    var asks: AskTable {
        didSet { asksChanged() }
    }
    /// The batches whose answers are being collected.
    var batches = BatchTable()
    /// Set on graceful shutdown: every client is told to go (1001), and new ones too.
    var shuttingDown = false
    /// The agent's terminals (`terminal/*`), run on the desktop.
    let terminals: TerminalHost
    /// When the stuck-client sweep runs (``sweepStuckClients()``); the clients' queues move it.
    let stuckSweep: SweepTimer
    /// When the orphaned-request and retention sweep runs (``sweepOrphanedAsks()``).
    let orphanSweep: SweepTimer
    /// When the token store's expired rows are next purged (auth on; set by the sweep's first run).
    var nextTokenPurge: ContinuousClock.Instant?

    /// Frames queued for one client beyond which it is disconnected if a write to it has waited
    /// ``clientStallTimeout`` for the peer (it stopped reading).
    static let maxQueuedFrames = 10_000
    /// Frames queued for one client that still reads beyond which it is disconnected all the same.
    static let maxQueuedFramesWhileReading = 100_000
    /// How long one write may wait for the peer to take data before a client that far behind counts as stuck.
    static let clientStallTimeout: Duration = .seconds(5)

    init(configuration: BridgeServerConfiguration, logger: Logger) throws(BridgeServerError) {
        self.configuration = configuration
        self.logger = logger
        do {
            self.workspace = try WorkspaceFiles(
                root: configuration.workingDirectory, scope: configuration.fileScope, protected: configuration.protectedFiles)
        } catch {
            throw error.serverError(workingDirectory: configuration.workingDirectory)
        }
        (launches, launchSink) = AsyncStream.makeStream(of: LaunchedAgent.self)
        (errands, errandSink) = AsyncStream.makeStream(of: HubErrand.self)
        terminals = TerminalHost(settings: configuration.terminal, clock: configuration.clock, logger: logger)
        stuckSweep = SweepTimer(clock: configuration.clock)
        orphanSweep = SweepTimer(clock: configuration.clock)
        asks = AskTable(deadlines: AskTable.Deadlines(
            permission: configuration.permissionRequestTimeout, other: configuration.clientRequestTimeout,
            orphaned: configuration.orphanedRequestTimeout))
        sessions = SessionTable(bounds: SessionTable.Bounds(
            replayCount: configuration.replayBufferSize, replayBytes: configuration.replayBufferBytes,
            reservesSeqs: configuration.sessionStore != nil, reservationBlock: BridgeHub.seqReservationBlock))
        if let store = configuration.sessionStore {
            // Issue 25 item 2: the sessions of the last run, dormant until a client attaches.
            var stored: [StoredSession] = []
            do {
                stored = try store.load()
            } catch {
                // Opened, but not readable now (a disk error): the bridge runs, its sessions stay on disk.
                logger.error("cannot read the stored sessions; starting without them", metadata: ["error": "\(error.description)"])
            }
            let (dormant, unusable) = BridgeHub.dormantSessions(
                stored, workspace: workspace, bounds: sessions.bounds, configuration: configuration, logger: logger)
            sessions.load(dormant)
            for session in unusable { store.enqueue(.deleteSession(session)) }
            if !dormant.isEmpty {
                logger.info("sessions kept from the last run", metadata: ["sessions": "\(dormant.count)", "path": "\(store.databaseURL.path)"])
            }
        }
    }

    /// Runs and watches agents until cancelled (cancellation stops the agent); with auth on, also closes the
    /// WebSockets of devices and token families as they are revoked (by this process at once, by another within
    /// ``BridgeServerConfiguration/revocationPollInterval``).
    nonisolated func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.sweepOrphanedAsks() }
            group.addTask { await self.sweepStuckClients() }
            group.addTask { await self.terminals.run { await self.terminalUpdate($0) } }
            // What event loops and synchronous ends hand the hub: owned here, ended with the group.
            group.addTask {
                for await errand in self.errands { await self.handle(errand) }
            }
            if let store = configuration.sessionStore {
                group.addTask { await store.runWriter(clock: self.configuration.clock) }
                await self.enforceRetention()
            }
            if let store = configuration.authenticator?.store {
                let interval = configuration.revocationPollInterval
                group.addTask {
                    for await revocation in store.revocationEvents(pollingEvery: interval) {
                        await self.revoked(revocation)
                    }
                }
            }
            for await launched in launches {
                // Taken before the agent runs: the messages of one read of its output reach the hub in one hop.
                let batches = (launched.agent as? any ACPEventBatching)?.takeEventBatches()
                group.addTask { await launched.agent.run() }
                if let batches {
                    group.addTask {
                        for await batch in batches {
                            await self.agentEvents(batch, generation: launched.generation)
                        }
                    }
                    continue
                }
                group.addTask {
                    for await event in launched.agent.events {
                        await self.agentEvent(event, generation: launched.generation)
                    }
                }
            }
            group.cancelAll()
        }
    }

    /// Lets prompts in flight finish within the grace period (cancelling the rest), then stops the agent and accepts
    /// no new one (the run loop ends once running agents are gone).
    ///
    /// Without waiting when the task is cancelled.
    func shutdown() async {
        await finishPrompts()
        terminals.close()
        // A clean stop: the store's last write (after everything queued) says no reserved `seq` is unaccounted for.
        store?.enqueue(.releaseReservations)
        launchSink.finish()
        if let launched = agentLink.launched { await launched.agent.stop() }
    }

    // MARK: Connections

    /// Registers a new connection (of `device`, when auth is on); returns its id and the frames to write to it.
    func connect(remote: String?, device: AuthenticatedDevice? = nil) -> (ConnectionID, OutboundQueue) {
        let frames = OutboundQueue(capacity: BridgeHub.maxQueuedFrames, hardCapacity: BridgeHub.maxQueuedFramesWhileReading,
                                   stallTimeout: BridgeHub.clientStallTimeout, clock: configuration.clock, stuckTimer: stuckSweep)
        let id = connections.add(device: device) { [logger] id in
            // The connection's metadata is added as lines are written (ConnectionLogHandler): no metadata copy per connection.
            let connectionLogger = ConnectionLogHandler.logger(logger, connection: id, remote: remote, device: device.map { "\($0.deviceID)" })
            return ClientRecord(outbound: frames, logger: connectionLogger, device: device?.deviceID)
        }
        connections[id]?.logger.info("client connected", metadata: ["clients": "\(connections.count)"])
        BridgeMetrics.connections.record(connections.count)
        BridgeMetrics.connectionsTotal.increment()
        if shuttingDown { send(.close(.goingAway, BridgeHub.shuttingDownReason), to: id) }
        return (id, frames)
    }

    /// Forgets a connection: detaches it from its sessions and releases requests only it could answer.
    func disconnect(_ id: ConnectionID) async {
        guard let client = connections.remove(id) else { return }
        client.outbound.finish()
        for session in client.sessions { sessions.detach(id, from: session) }
        batches.drop(connection: id)
        // A live session keeps its questions for the next client that resumes it.
        for settled in asks.clientLeft(id, at: configuration.clock.now, sessionExists: { sessions.contains($0) }) {
            switch settled {
            case .failed(let entry, let error):
                // Everyone else who was asked failed: the agent gets their error now.
                answerAgent(entry.ask.agentRequestID, .failure(error), generation: entry.ask.generation)
            case .unaskable(let entry):
                answerUnaskable(entry.ask, reason: "every client attached to session \(entry.ask.sessionID) went away")
            }
        }
        connectionLeft(id, client)
        client.logger.info("client disconnected", metadata: ["clients": "\(connections.count)"])
        BridgeMetrics.connections.record(connections.count)
        BridgeMetrics.sessions.record(sessions.count)
    }

    /// What the initialize deadline found.
    enum InitializeDeadline {
        /// The connection initialized (or is gone): nothing more to watch.
        case done
        /// It had not even started `initialize`: it was closed.
        case closed
        /// An `initialize` is being answered (the agent is starting): look again after another period.
        case inProgress
    }

    /// At the initialize deadline: closes the connection if it has not initialized and is not initializing.
    func initializeDeadline(_ id: ConnectionID) -> InitializeDeadline {
        guard let client = connections[id], client.dialect == nil else { return .done }
        if client.initializing > 0 { return .inProgress }
        let reason = "initialize not completed within \(configuration.initializeTimeout.words)"
        client.logger.notice("closing connection: \(reason)")
        send(.close(.policyViolation, reason), to: id)
        return .closed
    }

    /// Answers a frame that was too large with an error.
    func rejectOversized(_ id: ConnectionID, size: Int) {
        connections[id]?.logger.warning("message over the size limit", metadata: ["size": "\(size)", "limit": "\(configuration.maxFrameSize)"])
        deliver(JSONRPCResponse(id: .null, error: BridgeErrors.frameTooLarge(size, limit: configuration.maxFrameSize)), to: id, batch: nil)
    }

    /// Answers a binary frame with an error.
    func rejectBinary(_ id: ConnectionID) {
        connections[id]?.logger.notice("binary frame refused")
        deliver(JSONRPCResponse(id: .null, error: BridgeErrors.binaryFrame), to: id, batch: nil)
    }

    // MARK: Output

    /// Queues a frame for a client.
    ///
    /// A client that stopped reading (``maxQueuedFrames`` behind with one write to it waiting
    /// ``clientStallTimeout`` for the peer), or that is ``maxQueuedFramesWhileReading`` behind, is cut off.
    func send(_ frame: OutboundFrame, to id: ConnectionID) {
        guard let client = connections[id] else { return }
        BridgeMetrics.messagesOut.increment()
        if client.outbound.yield(frame) == .dropped { cutOff(client) }
    }

    /// Drops what is queued for a client that is not keeping up and closes its connection at once (its writer may be
    /// blocked on a peer that does not read).
    ///
    /// A client that resumes later gets what the replay buffer still holds.
    func cutOff(_ client: ClientRecord) {
        client.logger.warning("client is not keeping up; disconnecting it", metadata: [
            "queued_at_least": "\(BridgeHub.maxQueuedFrames)", "stall_limit": "\(BridgeHub.clientStallTimeout.words)",
            "hard_limit": "\(BridgeHub.maxQueuedFramesWhileReading)"])
        client.outbound.cutOff()
    }

    /// Sends a response, or adds it to its batch and sends the batch once complete.
    func deliver(_ response: JSONRPCResponse, to id: ConnectionID, batch: UInt64?) {
        let message = JSONRPCMessage.response(response)
        if let batch {
            switch batches.add(message, to: batch) {
            case .kept:
                return
            case .complete(let record):
                send(.text(JSONRPCMessage.batchText(record.responses)), to: record.connection)
                return
            case .notInBatch:
                break
            }
        }
        send(.message(message), to: id)
    }

    /// Sends an error in the client's dialect.
    func fail(_ id: ConnectionID, request: JSONRPCID, _ error: JSONRPCError, batch: UInt64?) {
        let converted = connections[id]?.dialect.map { $0.toClient(error) } ?? error
        deliver(JSONRPCResponse(id: request, error: converted), to: id, batch: batch)
    }

    /// Sends a notification whose params are in official spelling, converted to the client's dialect.
    func notify(_ id: ConnectionID, method: String, params: JSONValue?) {
        notify(CollectionOfOne(id), method: method, params: params)
    }

    /// Sends a notification whose params are in official spelling to several clients, each in its dialect.
    ///
    /// It is converted and encoded once per dialect, and every client of that dialect gets the same bytes.
    func notify(_ ids: some Sequence<ConnectionID>, method: String, params: JSONValue?) {
        var official: OutboundFrame?
        var seed: OutboundFrame?
        for id in ids {
            guard let dialect = connections[id]?.dialect else { continue }
            let frame: OutboundFrame
            if dialect.isSeed {
                frame = seed ?? notificationFrame(method: method, params: params, in: dialect)
                seed = frame
            } else {
                frame = official ?? notificationFrame(method: method, params: params, in: dialect)
                official = frame
            }
            send(frame, to: id)
        }
    }

    private func notificationFrame(method: String, params: JSONValue?, in dialect: ACPDialect) -> OutboundFrame {
        // An extension notification's params are free-form: never renamed; colliding keys are withheld (BridgeHub+Dialect).
        .message(.notification(clientNotification(method: method, params: params, in: dialect)))
    }
}
