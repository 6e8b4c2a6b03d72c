import BridgeRPC
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An ACP agent in a child process: NDJSON JSON-RPC, one message per line, on its stdin and stdout.
/// Its stderr lines go to the log. Real agents (`gemini --acp`, `claude-code-acp`) run unchanged.
///
/// Create it with ``launch(_:logger:)`` (which starts the process), then run ``run()`` in a task you own:
/// it returns once the process is gone, and cancelling it stops the process (SIGTERM, then SIGKILL).
public final class StdioAgent: ACPAgent {
    /// What the agent sends; see ``ACPAgent/events``.
    public let events: AsyncStream<ACPAgentEvent>
    private let eventSink: AsyncStream<ACPAgentEvent>.Continuation
    private let process: Process
    private let stdin: FileHandle
    private let writeQueue = DispatchQueue(label: "oa-bridge.agent.stdin")
    private let outstanding = OutstandingRequests()
    private let state = Mutex(State())
    private let configuration: StdioAgentConfiguration
    private let logger: Logger

    /// The longest line read from the agent; longer ones are dropped and logged.
    public static let maxLineLength = 64 << 20

    private struct State {
        var stdoutDone = false
        var exitReason: String?
        var finished = false
        var stopping = false
        var exitWaiter: CheckedContinuation<Void, Never>?
    }

    /// The process id, for logs.
    public var processIdentifier: Int32 { process.processIdentifier }

    private init(process: Process, stdin: FileHandle, configuration: StdioAgentConfiguration, logger: Logger) {
        (events, eventSink) = AsyncStream.makeStream(of: ACPAgentEvent.self)
        self.process = process
        self.stdin = stdin
        self.configuration = configuration
        self.logger = logger
    }

    /// Starts the agent process.
    public static func launch(_ configuration: StdioAgentConfiguration, logger: Logger) throws(ACPAgentError) -> StdioAgent {
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

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(configuration.command.dropFirst())
        process.environment = environment
        if let directory = configuration.workingDirectory {
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
        }
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors

        var agentLogger = logger
        agentLogger[metadataKey: "agent"] = "\(name)"
        let agent = StdioAgent(process: process, stdin: input.fileHandleForWriting, configuration: configuration, logger: agentLogger)
        process.terminationHandler = { [agent] finished in
            agent.processEnded(status: finished.terminationStatus, reason: finished.terminationReason)
        }
        do {
            try process.run()
        } catch {
            throw ACPAgentError.launchFailed("\(executable): \(error.localizedDescription)")
        }
        try? input.fileHandleForReading.close()
        try? output.fileHandleForWriting.close()
        try? errors.fileHandleForWriting.close()
        agentLogger[metadataKey: "pid"] = "\(process.processIdentifier)"
        agentLogger.info("agent process started", metadata: ["command": "\(configuration.command.joined(separator: " "))"])
        agent.startReader(output.fileHandleForReading, name: "stdout") { agent, line in agent.received(line: line) } atEnd: { agent in agent.stdoutEnded() }
        agent.startReader(errors.fileHandleForReading, name: "stderr") { agent, line in
            agent.logger.info("agent stderr", metadata: ["line": "\(String(decoding: line, as: UTF8.self))"])
        } atEnd: { _ in }
        return agent
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

    /// Reads `handle` line by line on a thread of its own until end of file, in chunks of up to 64 KiB.
    private func startReader(
        _ handle: FileHandle, name: String,
        onLine: @escaping @Sendable (StdioAgent, [UInt8]) -> Void,
        atEnd: @escaping @Sendable (StdioAgent) -> Void
    ) {
        let thread = Thread { [self] in
            var buffer = LineBuffer(maxLineLength: StdioAgent.maxLineLength)
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            let descriptor = handle.fileDescriptor
            while true {
                let dropped = chunk.withUnsafeMutableBufferPointer { storage -> Int? in
                    var count: Int
                    repeat {
                        count = read(descriptor, storage.baseAddress, storage.count)
                    } while count < 0 && errno == EINTR
                    guard count > 0 else { return nil }
                    return buffer.append(UnsafeBufferPointer(rebasing: storage[0..<count])) { line in onLine(self, line) }
                }
                guard let dropped else { break }
                if dropped > 0 {
                    logger.warning("dropped an over-long line from the agent", metadata: ["stream": "\(name)", "limit": "\(StdioAgent.maxLineLength)"])
                }
            }
            if let last = buffer.finish() { onLine(self, last) }
            try? handle.close()
            atEnd(self)
        }
        thread.name = "oa-bridge agent \(name)"
        thread.start()
    }

    private func received(line: [UInt8]) {
        let elements: [JSONRPCFrame.Element]
        switch JSONRPCFrame(parsingUTF8: line) {
        case .single(let element): elements = [element]
        case .batch(let batch): elements = batch
        }
        for element in elements {
            switch element {
            case .message(let message):
                outstanding.received(message)
                eventSink.yield(.message(message))
            case .invalid(_, let error):
                logger.warning("the agent wrote a line that is not JSON-RPC; ignored", metadata: [
                    "error": "\(error.message)", "line": "\(String(decoding: line, as: UTF8.self).prefix(200))",
                ])
            }
        }
    }

    private func stdoutEnded() {
        state.withLock { $0.stdoutDone = true }
        finishIfDone()
    }

    private func processEnded(status: Int32, reason: Process.TerminationReason) {
        let why = reason == .uncaughtSignal
            ? "the agent process was killed by signal \(status)"
            : "the agent process exited with status \(status)"
        state.withLock { $0.exitReason = why }
        logger.notice("agent process ended", metadata: ["reason": "\(why)"])
        finishIfDone()
        // A grandchild may keep stdout open: do not wait for it for ever.
        DispatchQueue.global().asyncAfter(deadline: .now() + 2) { [self] in
            state.withLock { $0.stdoutDone = true }
            finishIfDone()
        }
    }

    /// Once the process has ended and its output has been read, fails what is pending and ends the event stream.
    private func finishIfDone() {
        let (reason, waiter) = state.withLock { state -> (String?, CheckedContinuation<Void, Never>?) in
            guard !state.finished, state.stdoutDone, let reason = state.exitReason else { return (nil, nil) }
            state.finished = true
            defer { state.exitWaiter = nil }
            return (reason, state.exitWaiter)
        }
        guard let reason else { return }
        for response in outstanding.failAll(reason: reason) { eventSink.yield(.message(response)) }
        eventSink.yield(.exited(reason: reason))
        eventSink.finish()
        waiter?.resume()
    }

    /// Waits for the process to end; cancelling the calling task stops it.
    public func run() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = state.withLock { state in
                    if state.finished { return true }
                    state.exitWaiter = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            self.stop()
        }
    }

    /// Closes the agent's stdin (well-behaved agents exit on end of input), sends SIGTERM, and SIGKILL after the
    /// grace period if the process is still there. Calling it again does nothing.
    public func stop() {
        let first = state.withLock { state in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first, process.isRunning else { return }
        let pid = process.processIdentifier
        logger.info("stopping the agent process")
        let stdin = self.stdin
        writeQueue.async { try? stdin.close() }
        process.terminate()
        let grace = configuration.terminationGrace
        let seconds = Double(grace.components.seconds) + Double(grace.components.attoseconds) / 1e18
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [process, logger] in
            if process.isRunning {
                logger.warning("the agent ignored SIGTERM; killing it")
                kill(pid, SIGKILL)
            }
        }
    }

    /// Writes one message as one line to the agent's stdin.
    public func send(_ message: JSONRPCMessage) async throws(ACPAgentError) {
        if let reason = state.withLock({ $0.exitReason }) { throw ACPAgentError.notRunning(reason) }
        outstanding.sent(message)
        var bytes = message.jsonUTF8
        bytes.append(0x0A)
        let line = Data(bytes)
        let stdin = self.stdin
        let failure: String? = await withCheckedContinuation { continuation in
            writeQueue.async {
                do {
                    try stdin.write(contentsOf: line)
                    continuation.resume(returning: nil)
                } catch {
                    continuation.resume(returning: "\(error.localizedDescription)")
                }
            }
        }
        if let failure {
            if case .request(let request) = message { outstanding.forget(request.id) }
            throw ACPAgentError.writeFailed(failure)
        }
    }
}
