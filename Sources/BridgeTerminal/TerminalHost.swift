package import BridgeSandbox
package import BridgeTime
package import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The terminals the agent created, by id, within ``TerminalSettings/maxPerSession`` and
/// ``TerminalSettings/maxTotal``.
///
/// ``run(sink:)`` runs each one (see ``Terminal``); released terminals are killed and forgotten at once, and their
/// task ends when the process is gone.
///
/// Under ``TerminalConfinement/landlock`` (the default) each command runs under a Landlock ruleset made from the
/// session's ``SandboxPolicy`` (see ``LandlockRuleset``); where the kernel has none (or an ABI older than
/// `Landlock/minimumABI`), the host says so when it starts and turns terminals off (``settings``' `enabled` is false:
/// the agent is told `terminal: false` and every `terminal/*` request is refused) rather than run one unconfined.
package final class TerminalHost: Sendable {
    /// The limits and switches in effect: those given, except that `enabled` is false where terminals were asked for
    /// under ``TerminalConfinement/landlock`` and the kernel cannot confine them (``unavailable`` says why).
    package let settings: TerminalSettings
    /// Why terminals are off although they were asked for (no Landlock, or too old a one); `nil` otherwise.
    package let unavailable: SandboxError?
    private let clock: any BridgeClock
    private let logger: Logger
    private let state = Mutex<(terminals: [String: Terminal], nextID: UInt64, closed: Bool)>(([:], 1, false))
    private let launches: AsyncStream<Terminal>
    private let launchSink: AsyncStream<Terminal>.Continuation
    /// Confined terminals' `TMPDIR`.
    private let scratch = ScratchDirectory(prefix: "oa-bridge-terminals")

    /// A host with `settings`, whose timers run on `clock`.
    package init(settings: TerminalSettings, clock: any BridgeClock, logger: Logger) {
        self.clock = clock
        self.logger = logger
        (launches, launchSink) = AsyncStream.makeStream(of: Terminal.self)
        var effective = settings
        var unavailable: SandboxError?
        if settings.enabled {
            switch (settings.confinement, Landlock.usableABI(probe: settings.landlockProbe)) {
            case (.unconfined, _):
                logger.warning(
                    "terminals run unconfined (terminal confinement: unconfined): commands reach whatever the bridge's user can",
                    metadata: ["setting": "\(TerminalError.Setting.terminalConfinement.rawValue)"])
            case (.landlock, .success(let abi)):
                logger.info("terminals run confined by Landlock", metadata: ["abi": "\(abi)"])
            case (.landlock, .failure(let error)):
                effective.enabled = false
                unavailable = error
                logger.warning("terminals are off (the agent is told terminal: false): \(error.description)", metadata: [
                    "fix": .string(
                        "a kernel with Landlock ABI \(Landlock.minimumABI)+, or terminal confinement: unconfined in the bridge's settings "
                            + "to run them unconfined"),
                    "setting": "\(TerminalError.Setting.terminalConfinement.rawValue)",
                ])
            }
        }
        self.settings = effective
        self.unavailable = unavailable
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

    /// Starts `command` (see ``TerminalProcess``) for `session` in the directory open at `directory` (whose path is
    /// `directoryPath`, for the log), confined to `policy` unless ``TerminalSettings/confinement`` is unconfined, and
    /// registers it.
    package func create(
        session: String, generation: Int, command: String, args: [String], environment: [(String, String)], directory: Int32,
        directoryPath: String, policy: SandboxPolicy, outputByteLimit: Int?
    ) throws(TerminalError) -> Terminal {
        let limits = state.withLock { state -> TerminalError? in
            if state.closed || state.terminals.count >= settings.maxTotal { return .tooMany(limit: settings.maxTotal) }
            if state.terminals.values.count(where: { $0.session == session }) >= settings.maxPerSession {
                return .tooManyInSession(session: session, limit: settings.maxPerSession)
            }
            return nil
        }
        if let limits { throw limits }
        var ruleset: LandlockRuleset?
        var environment = environment
        if settings.confinement == .landlock {
            var policy = policy
            if let scratch = scratch.directory() {
                policy.writable.append(.descriptor(scratch.descriptor, name: scratch.path))
                if !environment.contains(where: { $0.0 == "TMPDIR" }) { environment.append(("TMPDIR", scratch.path)) }
            }
            do {
                ruleset = try LandlockRuleset.build(policy)
            } catch {
                throw .unconfinable(reason: error.description)
            }
        }
        let process = try TerminalProcess.launch(
            command: command, args: args, environment: environment, directory: directory, ruleset: ruleset)
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return "term-\(state.nextID)"
        }
        var terminalLogger = logger
        terminalLogger[metadataKey: "terminal"] = "\(id)"
        terminalLogger[metadataKey: "session"] = "\(session)"
        terminalLogger[metadataKey: "pid"] = "\(process.pid)"
        // The program's name only: a command line can carry secrets.
        terminalLogger.info("terminal started", metadata: ["program": "\(command.split(separator: " ").first ?? "")", "cwd": "\(directoryPath)", "confined": "\(ruleset != nil)"])
        let terminal = Terminal(
            id: id, session: session, generation: generation, process: process,
            outputLimit: min(outputByteLimit ?? settings.maxOutputBytes, settings.maxOutputBytes),
            notificationLimit: settings.maxNotificationBytes, logger: terminalLogger)
        state.withLock { $0.terminals[id] = terminal }
        launchSink.yield(terminal)
        return terminal
    }

    /// ``create(session:generation:command:args:environment:directory:directoryPath:policy:outputByteLimit:)`` in the
    /// directory at `directory`, opened here, confined to it (writable) and the system (readable).
    package func create(
        session: String, generation: Int, command: String, args: [String], environment: [(String, String)], directory: String,
        outputByteLimit: Int?
    ) throws(TerminalError) -> Terminal {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw .launchFailed(command: command, reason: "cannot open \(directory): \(String(cString: strerror(errno)))")
        }
        defer { closeDescriptor(descriptor) }
        return try create(
            session: session, generation: generation, command: command, args: args, environment: environment, directory: descriptor,
            directoryPath: directory, policy: .terminal(writable: [.descriptor(descriptor, name: directory)], protected: .none),
            outputByteLimit: outputByteLimit)
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
        scratch.remove()
    }
}

// close(2) under a name the type's own `close()` does not hide.
private func closeDescriptor(_ descriptor: Int32) { _ = close(descriptor) }
