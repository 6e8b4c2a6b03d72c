import BridgeACP
import BridgeRPC
import BridgeTestKit
import Foundation
import Logging
import Testing

/// The stdio agent on SwiftNIO pipes: framing, stderr, exit, ordering, failed writes, stopping.
///
/// The agents are small `/bin/sh` scripts: what is tested is the pipes and the process, so a real process, but no
/// interpreter to start.
@Suite("The stdio agent's pipes", .timeLimit(.minutes(1)), .tags(.externalTool))
struct StdioAgentTests {
    private func launch(_ script: String, log: TestLog = TestLog(), maxLineLength: Int = StdioAgent.maxLineLength,
                        grace: Duration = .seconds(3)) async throws -> StdioAgent {
        try await StdioAgent.launch(
            StdioAgentConfiguration(command: ["/bin/sh", "-c", script], terminationGrace: grace, maxLineLength: maxLineLength),
            logger: log.logger())
    }

    /// Runs the agent and collects every event until the stream ends (the agent exits by itself).
    private func runToEnd(_ agent: StdioAgent) async -> [ACPAgentEvent] {
        await withTaskGroup(of: [ACPAgentEvent].self) { group in
            group.addTask {
                await agent.run()
                return []
            }
            group.addTask {
                var seen: [ACPAgentEvent] = []
                for await event in agent.events { seen.append(event) }
                return seen
            }
            var all: [ACPAgentEvent] = []
            for await events in group { all += events }
            return all
        }
    }

    private func methods(_ events: [ACPAgentEvent]) -> [String] {
        events.compactMap { event in
            switch event {
            case .message(.notification(let note)): note.method
            case .exited: "exited"
            default: nil
            }
        }
    }

    @Test("a line over the maximum is dropped and logged, the lines after it and a last line without newline arrive, stderr goes to the log")
    func framingAndStderr() async throws {
        let log = TestLog()
        let agent = try await launch(#"""
        printf 'warming up\nstill warming\n' >&2
        printf '%0200d\n' 0 | tr 0 x
        printf '{"jsonrpc":"2.0","method":"after"}\r\n\n'
        printf '{"jsonrpc":"2.0","method":"last"}'
        """#, log: log, maxLineLength: 64)
        let events = await runToEnd(agent)
        #expect(methods(events) == ["after", "last", "exited"])
        guard case .exited(let reason)? = events.last else {
            Issue.record("no exit event")
            return
        }
        #expect(reason == "the agent process exited with status 0")
        let dropped = log.entries("dropped an over-long line from the agent")
        #expect(dropped.count == 1)
        #expect(dropped.first?.metadata["stream"] == "stdout")
        #expect(dropped.first?.metadata["limit"] == "64")
        #expect(log.entries("agent stderr").map { $0.metadata["line"] } == ["warming up", "still warming"])
    }

    @Test("an agent killed by a signal: its pending request fails saying so, then exited, then the stream ends")
    func killedBySignal() async throws {
        let agent = try await launch("read line; kill -KILL $$")
        try agent.send(.request(JSONRPCRequest(id: .int(5), method: "anything")))
        let events = await runToEnd(agent)
        guard events.count == 2, case .message(.response(let failed)) = events[0], case .exited(let reason) = events[1] else {
            Issue.record("unexpected events \(events)")
            return
        }
        #expect(failed.id == .int(5))
        #expect(failed.error?.message.contains("killed by signal 9") == true)
        #expect(reason == "the agent process was killed by signal 9")
        #expect(throws: ACPAgentError.notRunning(reason)) { try agent.send(.notification(JSONRPCNotification(method: "late"))) }
    }

    @Test("sends from many tasks at once reach the agent each in its own order, none lost")
    func ordering() async throws {
        let agent = try await launch("exec cat")
        let tasks = 8
        let perTask = 250
        let events = await withTaskGroup(of: [ACPAgentEvent].self) { group in
            group.addTask {
                await agent.run()
                return []
            }
            group.addTask {
                var seen: [ACPAgentEvent] = []
                for await event in agent.events {
                    seen.append(event)
                    if seen.count == tasks * perTask { agent.stop() }
                }
                return seen
            }
            for task in 0..<tasks {
                group.addTask {
                    for n in 0..<perTask {
                        try? agent.send(.notification(JSONRPCNotification(method: "n", params: ["task": .int(Int64(task)), "n": .int(Int64(n))])))
                        if n % 16 == 0 { await Task.yield() }
                    }
                    return []
                }
            }
            var all: [ACPAgentEvent] = []
            for await events in group { all += events }
            return all
        }
        var next = [Int64](repeating: 0, count: tasks)
        var inOrder = true
        for case .message(.notification(let note)) in events {
            guard let task = note.params?["task"]?.intValue, let n = note.params?["n"]?.intValue else { continue }
            if n != next[Int(task)] { inOrder = false }
            next[Int(task)] = n + 1
        }
        #expect(inOrder)
        #expect(next == [Int64](repeating: Int64(perTask), count: tasks))
    }

    @Test("a write that fails (the agent closed its stdin) answers the request with an error event")
    func failedWriteIsAnEvent() async throws {
        // Stdin closed, then a sleep that lasts until the test stops the agent.
        let agent = try await launch(#"""
        exec 0<&-
        echo '{"jsonrpc":"2.0","method":"closed"}'
        exec sleep 30
        """#, grace: .milliseconds(200))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await agent.run() }
            var events = agent.events.makeAsyncIterator()
            guard case .message(.notification(let closed)) = await events.next(), closed.method == "closed" else {
                Issue.record("the agent did not start")
                return
            }
            try agent.send(.request(JSONRPCRequest(id: .int(7), method: "unwritable")))
            guard case .message(.response(let failed)) = await events.next() else {
                Issue.record("no error response")
                return
            }
            #expect(failed.id == .int(7))
            #expect(failed.error?.code == JSONRPCError.internalErrorCode)
            #expect(failed.error?.message.contains(ACPAgentError.writeFailed("").description) == true)
            group.cancelAll()
        }
    }

    @Test("an agent that ignores SIGTERM is killed after the grace period")
    func killAfterGrace() async throws {
        // SIGTERM ignored (kept so across exec): only the SIGKILL after the grace period ends the sleep.
        let agent = try await launch(#"""
        trap '' TERM
        echo '{"jsonrpc":"2.0","method":"ready"}'
        exec sleep 30
        """#, grace: .milliseconds(200))
        let started = ContinuousClock.now
        let reason: String? = await withTaskGroup(of: String?.self) { group in
            group.addTask {
                await agent.run()
                return nil
            }
            group.addTask {
                var reason: String?
                for await event in agent.events {
                    switch event {
                    case .message(.notification): agent.stop()
                    case .exited(let why): reason = why
                    default: break
                    }
                }
                return reason
            }
            var reason: String?
            for await result in group { reason = reason ?? result }
            return reason
        }
        #expect(reason == "the agent process was killed by signal 9")
        #expect(ContinuousClock.now - started < .seconds(20))
    }
}
