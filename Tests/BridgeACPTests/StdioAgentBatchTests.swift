import BridgeProcess
import BridgeRPC
import BridgeTestKit
import Foundation
import Logging
import NIOCore
import Synchronization
import Testing
@testable import BridgeACP

/// The stdio agent's events in batches (``ACPEventBatching``): the messages of one read of stdout together, in order.
///
/// The agents are `/bin/sh` scripts whose `printf` writes its whole text with one write(2).
@Suite("The stdio agent's event batches", .timeLimit(.minutes(1)), .tags(.externalTool))
struct StdioAgentBatchTests {
    private func launch(_ script: String, log: TestLog = TestLog(), launcher: any StdioAgentLauncher = StdioAgentProcessLauncher())
        async throws -> StdioAgent {
        try await StdioAgent.launch(
            StdioAgentConfiguration(command: ["/bin/sh", "-c", script], terminationGrace: .seconds(3)), launcher: launcher, logger: log.logger())
    }

    /// The default launcher, keeping the process it starts so that the test can wait for its end.
    private final class KeepingLauncher: StdioAgentLauncher {
        private let started = Mutex<ChildProcess?>(nil)

        var process: ChildProcess? { started.withLock { $0 } }

        func launch(_ request: StdioAgentLaunchRequest) throws(ACPAgentError) -> ChildProcess {
            let process = try StdioAgentProcessLauncher().launch(request)
            started.withLock { $0 = process }
            return process
        }
    }

    /// Runs the agent to its end, collecting its batches (taken before it runs) and whatever ``ACPAgent/events`` gives.
    private func runBatched(_ agent: StdioAgent) async -> (batches: [[ACPAgentEvent]], single: [ACPAgentEvent]) {
        guard let batches = agent.takeEventBatches() else {
            Issue.record("no batches")
            return ([], [])
        }
        async let run: Void = agent.run()
        var all: [[ACPAgentEvent]] = []
        for await batch in batches { all.append(batch) }
        var single: [ACPAgentEvent] = []
        for await event in agent.events { single.append(event) }
        await run
        return (all, single)
    }

    private func methods(_ batch: [ACPAgentEvent]) -> [String] {
        batch.map { event in
            switch event {
            case .message(let message): message.method ?? "response"
            case .exited: "exited"
            }
        }
    }

    @Test("the lines of one write come as one batch in order, a bad line among them skipped; events gives nothing")
    func oneReadOneBatch() async throws {
        let log = TestLog()
        let agent = try await launch(#"""
        printf '{"jsonrpc":"2.0","method":"one"}
        {"jsonrpc":"2.0","method":"two"}
        not json
        {"jsonrpc":"2.0","method":"three"}\r

        {"jsonrpc":"2.0","method":"four"}
        '
        """#, log: log)
        let (batches, single) = await runBatched(agent)
        #expect(batches.map(methods) == [["one", "two", "three", "four"], ["exited"]])
        #expect(single.isEmpty)
        #expect(log.entries("the agent wrote a line that is not JSON-RPC; ignored").count == 1)
    }

    @Test("a line split across two reads is whole in the batch of the read that ends it, before the lines after it")
    func lineAcrossReads() async throws {
        // The agent writes its next part once told to, so that each part is a read of its own.
        let agent = try await launch(#"""
        printf '{"jsonrpc":"2.0","method":"first"}\n{"jsonrpc":"2.0","met'
        read line
        printf 'hod":"second"}\n{"jsonrpc":"2.0","method":"third"}\n'
        read line
        printf '{"jsonrpc":"2.0","method":"last"}'
        """#)
        guard let batches = agent.takeEventBatches() else {
            Issue.record("no batches")
            return
        }
        async let run: Void = agent.run()
        var seen: [[String]] = []
        for await batch in batches {
            seen.append(methods(batch))
            if seen.count <= 2 { try agent.send(.notification(JSONRPCNotification(method: "next"))) }
        }
        await run
        #expect(seen == [["first"], ["second", "third"], ["last"], ["exited"]])
    }

    @Test("a read of more messages than a batch holds comes in full batches, in order")
    func bigRead() async throws {
        let launcher = KeepingLauncher()
        let agent = try await launch(#"""
        lines=; n=0
        while [ $n -lt 150 ]; do lines="$lines{\"jsonrpc\":\"2.0\",\"method\":\"m$n\"}
        "; n=$((n + 1)); done
        printf '%s' "$lines"
        """#, launcher: launcher)
        // Its lines are in the pipe before the reader starts (it has written them and exited), so that one read
        // holds them all.
        let process = try #require(launcher.process)
        #expect(await process.wait() == .exited(0))
        let (batches, _) = await runBatched(agent)
        let messages = batches.dropLast().flatMap(methods)
        #expect(messages == (0..<150).map { "m\($0)" })
        #expect(batches.dropLast().allSatisfy { $0.count <= 64 })
        #expect(batches.last.map(methods) == ["exited"])
    }

    @Test("requests left unanswered by a dead agent fail in its last batch, just before exited")
    func lastBatch() async throws {
        let agent = try await launch("read line; kill -KILL $$")
        try agent.send(.request(JSONRPCRequest(id: .int(5), method: "anything")))
        let (batches, _) = await runBatched(agent)
        guard batches.count == 1, batches[0].count == 2, case .message(.response(let failed)) = batches[0][0],
              case .exited(let reason) = batches[0][1] else {
            Issue.record("unexpected batches \(batches)")
            return
        }
        #expect(failed.id == .int(5))
        #expect(reason == "the agent process was killed by signal 9")
    }

    @Test("batches are taken once, and only before the agent runs")
    func takenBeforeRunOnly() async throws {
        let taken = try await launch("read line")
        #expect(taken.takeEventBatches() != nil)
        #expect(taken.takeEventBatches() == nil)
        taken.stop()
        await taken.run()

        let running = try await launch(#"echo '{"jsonrpc":"2.0","method":"ready"}'; read line"#)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await running.run() }
            var events = running.events.makeAsyncIterator()
            guard case .message(.notification(let ready)) = await events.next(), ready.method == "ready" else {
                Issue.record("the agent did not start")
                return
            }
            #expect(running.takeEventBatches() == nil)
            running.stop()
            var rest: [ACPAgentEvent] = []
            while let event = await events.next() { rest.append(event) }
            guard case .exited? = rest.last else {
                Issue.record("no exit on events: \(rest)")
                return
            }
        }
    }

    @Test("the framer gives every complete line of a chunk at once, keeping an unfinished one for the next")
    func framerLines() {
        var framer = LineFramer(maxLineLength: 8)
        var buffer = ByteBuffer(string: "a\nb\r\n\n0123456789\nc\nhal")
        let text: ([AgentLine]) -> [String] = { lines in
            lines.map { line in
                switch line {
                case .line(let bytes): String(buffer: bytes)
                case .overlong: "<overlong>"
                }
            }
        }
        #expect(text(framer.lines(&buffer)) == ["a", "b", "<overlong>", "c"])
        #expect(framer.lines(&buffer).isEmpty)
        buffer.writeString("f\nend")
        #expect(text(framer.lines(&buffer)) == ["half"])
        #expect(text(framer.finishLines(&buffer)) == ["end"])
        #expect(buffer.readableBytes == 0)
    }
}
