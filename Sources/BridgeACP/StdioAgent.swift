import BridgeProcess
public import BridgeRPC
import Foundation
public import Logging
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An ACP agent in a child process: NDJSON JSON-RPC, one message per line, on its stdin and stdout.
///
/// Its stderr lines go to the log. Real agents (`gemini --acp`, `claude-code-acp`) run unchanged.
///
/// Create it with ``launch(_:launcher:logger:)`` (which starts the process, through a ``StdioAgentLauncher``: a direct
/// `ChildProcess` by default, a supervised and sandboxed one in `oa-bridge serve`), then run ``run()`` in a task you own: it reads
/// and writes the agent's pipes (SwiftNIO channels, no threads of its own) and returns once the process is gone;
/// cancelling it stops the process (SIGTERM, then SIGKILL). ``send(_:)`` queues a line for stdin without waiting.
/// Its events come one by one on ``events``, or, taken with ``takeEventBatches()`` before it runs, the messages of
/// each read of its stdout together.
public final class StdioAgent: ACPEventBatching {
    /// What the agent sends; see ``ACPAgent/events``.
    ///
    /// Finishes at once when ``takeEventBatches()`` took them.
    public let events: AsyncStream<ACPAgentEvent>
    private let eventSink: AsyncStream<ACPAgentEvent>.Continuation
    /// Where events go: chosen by ``takeEventBatches()`` until ``run()`` starts, then fixed.
    private let delivery = Mutex(Delivery.open)
    /// Lines for stdin, in the order ``send(_:)`` queued them; finished when the agent stops or ends.
    private let outgoing: AsyncStream<OutgoingLine>
    private let outgoingSink: AsyncStream<OutgoingLine>.Continuation
    private let process: ChildProcess
    private let pipes: StdioAgentPipes
    private let outstanding = OutstandingRequests()
    private let stopping = Mutex(false)
    /// Why the agent can take no more input although its end may not be reported yet (see ``endReason``).
    private let broken = Mutex<String?>(nil)
    /// Requests whose write failed, until their owner takes them back (``takeUndelivered(_:)``).
    private let undelivered = Mutex<[JSONRPCID: JSONRPCRequest]>([:])
    /// Requests sent with ``resend(_:)``: a failed write of one of these is final.
    private let resent = Mutex<Set<JSONRPCID>>([])
    private let configuration: StdioAgentConfiguration
    private let logger: Logger

    /// Where the agent's events go.
    private enum Delivery {
        /// Not chosen yet (``run()`` has not started): one by one, unless batches are taken now.
        case open
        /// One by one on ``events``.
        case single
        /// In batches, to the stream ``takeEventBatches()`` returned.
        case batched(AsyncStream<[ACPAgentEvent]>.Continuation)
    }

    /// The default longest line read from the agent (``StdioAgentConfiguration/maxLineLength``); longer ones are
    /// dropped and logged.
    public static let maxLineLength = 64 << 20

    /// The most messages in one batch of events (``takeEventBatches()``); a read with more gives several.
    static let maxBatch = 64

    /// How long the output of an agent that has exited is still read: a grandchild may keep it open.
    static let outputGrace: TimeAmount = .seconds(2)

    /// The process id, for logs.
    public var processIdentifier: Int32 { process.pid }

    /// Why this agent can take no more requests, or nil while it can: its process ended, its stdin is closed, a
    /// write to it failed or its stdout ended.
    ///
    /// The pipes tell this as soon as the process dies; the process's end is reported later (the launcher learns
    /// it on a thread of its own, tens of ms on a busy machine), and a request sent in between would fail to be
    /// written.
    public var endReason: String? {
        if let exit = process.exit { return Self.reason(exit) }
        if let reason = broken.withLock({ $0 }) { return reason }
        return pipes.stdin.channel.isActive ? nil : "the agent's stdin is closed"
    }

    private init(process: ChildProcess, pipes: StdioAgentPipes, configuration: StdioAgentConfiguration, logger: Logger) {
        (events, eventSink) = AsyncStream.makeStream(of: ACPAgentEvent.self)
        (outgoing, outgoingSink) = AsyncStream.makeStream(of: OutgoingLine.self)
        self.process = process
        self.pipes = pipes
        self.configuration = configuration
        self.logger = logger
    }

    /// Starts the agent process with `launcher` and connects its pipes.
    public static func launch(
        _ configuration: StdioAgentConfiguration, launcher: any StdioAgentLauncher = StdioAgentProcessLauncher(), logger: Logger
    ) async throws(ACPAgentError) -> StdioAgent {
        guard let name = configuration.command.first, !name.isEmpty else {
            throw ACPAgentError.launchFailed("the agent command is empty")
        }
        var environment = ProcessInfo.processInfo.environment
        environment.merge(configuration.environment) { _, new in new }
        let executable = try resolve(name, path: environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin")
        if let directory = configuration.workingDirectory {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ACPAgentError.launchFailed("the agent's working directory \(directory) does not exist")
            }
        }
        // A write to an agent that has just died must fail with EPIPE, not kill the bridge.
        signal(SIGPIPE, SIG_IGN)

        let input: ChildProcessPipe
        let output: ChildProcessPipe
        let errors: ChildProcessPipe
        do throws(ChildProcessError) {
            input = try ChildProcessPipe(for: executable)
            do throws(ChildProcessError) {
                output = try ChildProcessPipe(for: executable)
            } catch {
                closeAll(input.read, input.write)
                throw error
            }
            do throws(ChildProcessError) {
                errors = try ChildProcessPipe(for: executable)
            } catch {
                closeAll(input.read, input.write, output.read, output.write)
                throw error
            }
        } catch {
            throw .spawnFailed(error)
        }

        let process: ChildProcess
        do throws(ACPAgentError) {
            process = try launcher.launch(StdioAgentLaunchRequest(
                executable: executable, arguments: Array(configuration.command.dropFirst()), environment: environment,
                workingDirectory: configuration.workingDirectory, stdin: input.read, stdout: output.write, stderr: errors.write))
        } catch {
            closeAll(input.read, input.write, output.read, output.write, errors.read, errors.write)
            throw error
        }
        // The child has its ends now.
        closeAll(input.read, output.write, errors.write)

        var agentLogger = logger
        agentLogger[metadataKey: "agent"] = "\(name)"
        agentLogger[metadataKey: "pid"] = "\(process.pid)"
        let pipes: StdioAgentPipes
        do {
            pipes = try await StdioAgentPipes.wrap(stdin: input.write, stdout: output.read, stderr: errors.read, maxLineLength: configuration.maxLineLength)
        } catch {
            process.kill()
            throw ACPAgentError.launchFailed("could not connect the agent's pipes: \(error)")
        }
        agentLogger.info("agent process started", metadata: ["command": "\(configuration.command.joined(separator: " "))"])
        return StdioAgent(process: process, pipes: pipes, configuration: configuration, logger: agentLogger)
    }

    /// Finds `name` on `path` unless it already names a file.
    static func resolve(_ name: String, path: String) throws(ACPAgentError) -> String {
        if name.contains("/") {
            guard FileManager.default.isExecutableFile(atPath: name) else {
                throw ACPAgentError.launchFailed("\(name) is not an executable file")
            }
            return name
        }
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw ACPAgentError.launchFailed("\(name) was not found on PATH (\(path)); give its full path or install it")
    }

    /// `the agent process exited with status 3`, `the agent process was killed by signal 9`.
    static func reason(_ exit: ChildProcess.Exit) -> String {
        switch exit {
        case .exited(let status): return "the agent process exited with status \(status)"
        case .signaled(let signal): return "the agent process was killed by signal \(signal)"
        }
    }

    private static func closeAll(_ descriptors: CInt...) {
        for descriptor in descriptors { close(descriptor) }
    }

    // MARK: Running

    /// Reads and writes the agent's pipes until the process is gone and its output read; then fails what is
    /// pending, emits ``ACPAgentEvent/exited(reason:)`` and returns.
    ///
    /// Cancelling the calling task stops the agent.
    public func run() async {
        delivery.withLock { if case .open = $0 { $0 = .single } }
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.writeStdin() }
                group.addTask { await self.readStdout() }
                group.addTask { await self.readStderr() }
                group.addTask { await self.watchExit() }
            }
        } onCancel: {
            self.stop()
        }
        let reason = Self.reason(await process.wait())
        var last = outstanding.failAll(reason: reason).map(ACPAgentEvent.message)
        last.append(.exited(reason: reason))
        emit(last)
        eventSink.finish()
        if case .batched(let sink) = delivery.withLock({ $0 }) { sink.finish() }
    }

    /// Takes the events in batches (see ``ACPEventBatching``): each read of stdout gives one batch of its messages.
    public func takeEventBatches() -> AsyncStream<[ACPAgentEvent]>? {
        delivery.withLock { delivery in
            guard case .open = delivery else { return nil }
            let (batches, sink) = AsyncStream.makeStream(of: [ACPAgentEvent].self)
            delivery = .batched(sink)
            eventSink.finish()
            return batches
        }
    }

    /// Passes events on, in order: as one batch, or one by one on ``events``.
    private func emit(_ batch: [ACPAgentEvent]) {
        guard !batch.isEmpty else { return }
        switch delivery.withLock({ $0 }) {
        case .batched(let sink): sink.yield(batch)
        case .open, .single: for event in batch { eventSink.yield(event) }
        }
    }

    /// Waits for the process to end, then stops taking lines for it and gives its output a grace period.
    private func watchExit() async {
        let reason = Self.reason(await process.wait())
        logger.notice("agent process ended", metadata: ["reason": "\(reason)"])
        outgoingSink.finish()
        let pipes = self.pipes
        pipes.stdout.channel.eventLoop.scheduleTask(in: StdioAgent.outputGrace) { pipes.closeOutput() }
    }

    /// Writes queued lines to stdin in order; a failed write answers its request with an error on ``events``.
    private func writeStdin() async {
        do {
            try await pipes.stdin.executeThenClose { _, writer in
                var failed = false
                for await line in outgoing {
                    do {
                        try await writer.write(line.bytes)
                        if let id = line.requestID { resent.withLock { _ = $0.remove(id) } }
                    } catch {
                        if !failed { logger.warning("could not write to the agent", metadata: ["error": "\(error)"]) }
                        failed = true
                        markBroken("the agent stopped reading its input (\(error))")
                        if let id = line.requestID, outstanding.forget(id) {
                            keepUndelivered(line, id: id)
                            let failure = ACPAgentError.writeFailed("\(error)")
                            emit([.message(.response(JSONRPCResponse(id: id, error: failure.rpcError)))])
                        }
                    }
                }
                writer.finish()
            }
        } catch {
            logger.debug("the agent's stdin closed with an error", metadata: ["error": "\(error)"])
        }
    }

    /// Keeps a request that never reached the agent for ``takeUndelivered(_:)``, unless it was already resent.
    private func keepUndelivered(_ line: OutgoingLine, id: JSONRPCID) {
        guard resent.withLock({ $0.remove(id) }) == nil,
              case .single(.message(.request(let request))) = JSONRPCFrame(parsingUTF8: Array(line.bytes.readableBytesView)) else { return }
        undelivered.withLock { $0[id] = request }
    }

    private func readStdout() async {
        do {
            try await pipes.stdout.executeThenClose { reads in
                // The messages of one read go on together: one hand-off to the consumer per read, not per line.
                var batch: [ACPAgentEvent] = []
                for try await lines in reads {
                    for line in lines {
                        switch line {
                        case .line(let bytes): received(line: Array(bytes.readableBytesView), into: &batch)
                        case .overlong: overlong("stdout")
                        }
                        // A big read goes on in parts, so that its consumer (the hub) takes other work in between.
                        if batch.count >= StdioAgent.maxBatch {
                            emit(batch)
                            batch.removeAll(keepingCapacity: true)
                        }
                    }
                    emit(batch)
                    batch.removeAll(keepingCapacity: true)
                }
            }
        } catch {
            logger.notice("reading the agent's stdout failed", metadata: ["error": "\(error)"])
        }
        // An agent cannot answer once its stdout has ended, whether or not its process is still there.
        markBroken("the agent closed its stdout")
    }

    private func markBroken(_ reason: String) {
        broken.withLock { if $0 == nil { $0 = reason } }
    }

    private func readStderr() async {
        do {
            try await pipes.stderr.executeThenClose { reads in
                for try await lines in reads {
                    for line in lines {
                        switch line {
                        case .line(let bytes): logger.info("agent stderr", metadata: ["line": "\(String(buffer: bytes))"])
                        case .overlong: overlong("stderr")
                        }
                    }
                }
            }
        } catch {
            logger.notice("reading the agent's stderr failed", metadata: ["error": "\(error)"])
        }
    }

    private func overlong(_ stream: String) {
        logger.warning("dropped an over-long line from the agent", metadata: ["stream": "\(stream)", "limit": "\(configuration.maxLineLength)"])
    }

    /// Parses one line of stdout, adding its messages to `batch` (a line that is not JSON-RPC is logged and skipped).
    private func received(line: [UInt8], into batch: inout [ACPAgentEvent]) {
        // Most lines are session/updates a relay forwards as they are: scanned, not parsed (their params are parsed
        // only if something reads them). Anything else, or anything the scan is unsure of, is parsed in full.
        if let update = JSONRPCNotification(scanning: line, method: ACPMethod.sessionUpdate) {
            batch.append(.message(.notification(update)))
            return
        }
        let elements: [JSONRPCFrame.Element]
        switch JSONRPCFrame(parsingUTF8: line) {
        case .single(let element): elements = [element]
        case .batch(let batch): elements = batch
        }
        for element in elements {
            switch element {
            case .message(let message):
                outstanding.received(message)
                batch.append(.message(message))
            case .invalid(_, let error):
                logger.warning("the agent wrote a line that is not JSON-RPC; ignored", metadata: [
                    "error": "\(error.message)", "line": "\(String(decoding: line.prefix(200), as: UTF8.self))",
                ])
            }
        }
    }

    // MARK: Stopping and sending

    /// Closes the agent's stdin (well-behaved agents exit on end of input), sends SIGTERM, and SIGKILL after the
    /// grace period if the process is still there.
    ///
    /// Calling it again does nothing.
    public func stop() {
        let first = stopping.withLock { stopping in
            defer { stopping = true }
            return !stopping
        }
        guard first, process.exit == nil else { return }
        logger.info("stopping the agent process")
        outgoingSink.finish()
        process.terminate()
        let process = self.process
        let logger = self.logger
        pipes.stdin.channel.eventLoop.scheduleTask(in: TimeAmount(configuration.terminationGrace)) {
            guard process.exit == nil else { return }
            logger.warning("the agent ignored SIGTERM; killing it")
            process.kill()
        }
    }

    /// Queues one message as one line for the agent's stdin, behind everything queued before; does not wait.
    ///
    /// Throws ``ACPAgentError/notRunning(_:)`` once the agent has ended or is stopping. A write that fails later
    /// answers the request (if it is one) with an error response on ``events``.
    public func send(_ message: JSONRPCMessage) throws(ACPAgentError) {
        if let exit = process.exit { throw ACPAgentError.notRunning(Self.reason(exit)) }
        outstanding.sent(message)
        let line = OutgoingLine(message)
        guard case .terminated = outgoingSink.yield(line) else { return }
        if let id = line.requestID { outstanding.forget(id) }
        throw ACPAgentError.notRunning(process.exit.map(Self.reason) ?? "the agent is stopping")
    }

    /// Takes back the request with `id` if its write failed: it never reached this agent, so its owner may send it
    /// to another (its error response, ``ACPAgentError/writeFailed(_:)``, has been sent on ``events``).
    ///
    /// Nil for any other request, and for one sent with ``resend(_:)``.
    public func takeUndelivered(_ id: JSONRPCID) -> JSONRPCRequest? {
        undelivered.withLock { $0.removeValue(forKey: id) }
    }

    /// Sends a request that another agent never received (``takeUndelivered(_:)``), like ``send(_:)``; if this
    /// write fails too the request is not kept again, so a request goes to at most two agents.
    public func resend(_ request: JSONRPCRequest) throws(ACPAgentError) {
        resent.withLock { _ = $0.insert(request.id) }
        do {
            try send(.request(request))
        } catch {
            resent.withLock { _ = $0.remove(request.id) }
            throw error
        }
    }
}
