import BridgeTime
import Logging
import Synchronization

/// The terminals the agent created, by id, within ``TerminalSettings/maxPerSession`` and
/// ``TerminalSettings/maxTotal``. ``run(sink:)`` runs each one (see ``Terminal``); released terminals are killed and
/// forgotten at once, and their task ends when the process is gone.
package final class TerminalHost: Sendable {
    /// The limits and switches.
    package let settings: TerminalSettings
    private let clock: any BridgeClock
    private let logger: Logger
    private let state = Mutex<(terminals: [String: Terminal], nextID: UInt64, closed: Bool)>(([:], 1, false))
    private let launches: AsyncStream<Terminal>
    private let launchSink: AsyncStream<Terminal>.Continuation

    /// A host with `settings`, whose timers run on `clock`.
    package init(settings: TerminalSettings, clock: any BridgeClock, logger: Logger) {
        self.settings = settings
        self.clock = clock
        self.logger = logger
        (launches, launchSink) = AsyncStream.makeStream(of: Terminal.self)
    }

    /// Runs every terminal created until ``close()``, then until their processes are gone; cancelling it kills them.
    package func run(sink: @escaping @Sendable (TerminalUpdate) async -> Void) async {
        await withDiscardingTaskGroup { group in
            for await terminal in launches {
                group.addTask { await terminal.run(settings: self.settings, clock: self.clock, sink: sink) }
            }
        }
    }

    /// The terminals held now (created and not released), of `session` or of all sessions.
    func count(session: String? = nil) -> Int {
        state.withLock { state in
            guard let session else { return state.terminals.count }
            return state.terminals.values.count { $0.session == session }
        }
    }

    /// Starts `command` (see ``TerminalProcess``) for `session` and registers it.
    package func create(
        session: String, generation: Int, command: String, args: [String], environment: [(String, String)], directory: String,
        outputByteLimit: Int?
    ) throws(TerminalError) -> Terminal {
        let limits = state.withLock { state -> TerminalError? in
            if state.closed || state.terminals.count >= settings.maxTotal { return .tooMany(limit: settings.maxTotal) }
            if state.terminals.values.count(where: { $0.session == session }) >= settings.maxPerSession {
                return .tooManyInSession(session: session, limit: settings.maxPerSession)
            }
            return nil
        }
        if let limits { throw limits }
        let process = try TerminalProcess.launch(command: command, args: args, environment: environment, directory: directory)
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return "term-\(state.nextID)"
        }
        var terminalLogger = logger
        terminalLogger[metadataKey: "terminal"] = "\(id)"
        terminalLogger[metadataKey: "session"] = "\(session)"
        terminalLogger[metadataKey: "pid"] = "\(process.pid)"
        // The program's name only: a command line can carry secrets.
        terminalLogger.info("terminal started", metadata: ["program": "\(command.split(separator: " ").first ?? "")", "cwd": "\(directory)"])
        let terminal = Terminal(
            id: id, session: session, generation: generation, process: process,
            outputLimit: min(outputByteLimit ?? settings.maxOutputBytes, settings.maxOutputBytes),
            notificationLimit: settings.maxNotificationBytes, logger: terminalLogger)
        state.withLock { $0.terminals[id] = terminal }
        launchSink.yield(terminal)
        return terminal
    }

    /// The terminal `id` of `session`.
    package func terminal(_ id: String, session: String) throws(TerminalError) -> Terminal {
        guard let terminal = state.withLock({ $0.terminals[id] }), terminal.session == session else {
            throw .unknownTerminal(session: session, terminal: id)
        }
        return terminal
    }

    /// Kills and forgets the terminal `id` of `session`.
    package func release(_ id: String, session: String) throws(TerminalError) {
        let terminal = try terminal(id, session: session)
        state.withLock { _ = $0.terminals.removeValue(forKey: id) }
        terminal.process.kill()
    }

    /// Kills and forgets every terminal of `session`, or of every session; returns how many.
    @discardableResult
    package func releaseAll(session: String? = nil) -> Int {
        let released = state.withLock { state -> [Terminal] in
            let chosen = state.terminals.values.filter { session == nil || $0.session == session }
            for terminal in chosen { state.terminals[terminal.id] = nil }
            return chosen
        }
        for terminal in released { terminal.process.kill() }
        if !released.isEmpty {
            logger.info("terminals released", metadata: ["count": "\(released.count)", "session": "\(session ?? "all")"])
        }
        return released.count
    }

    /// Kills every terminal and takes no more (shutdown); ``run(sink:)`` ends once their processes are gone.
    package func close() {
        state.withLock { $0.closed = true }
        releaseAll()
        launchSink.finish()
    }
}
