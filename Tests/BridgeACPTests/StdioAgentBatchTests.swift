@testable import BridgeACP
import BridgeRPC
import Foundation
import Logging
import NIOCore
import Testing

/// The stdio agent's events in batches (``ACPEventBatching``): the messages of one read of stdout together, in order.
@Suite("The stdio agent's event batches", .timeLimit(.minutes(1)), .tags(.externalTool))
struct StdioAgentBatchTests {
    private func launch(_ script: String, log: TestLog = TestLog()) async throws -> StdioAgent {
        try await StdioAgent.launch(
            StdioAgentConfiguration(command: ["python3", "-u", "-c", script], terminationGrace: .seconds(3)), logger: log.logger())
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
        let agent = try await launch("""
        import os
        os.write(1, b'{"jsonrpc":"2.0","method":"one"}\\n{"jsonrpc":"2.0","method":"two"}\\nnot json\\n'
                    b'{"jsonrpc":"2.0","method":"three"}\\r\\n\\n{"jsonrpc":"2.0","method":"four"}\\n')
        """, log: log)
        let (batches, single) = await runBatched(agent)
        #expect(batches.map(methods) == [["one", "two", "three", "four"], ["exited"]])
        #expect(single.isEmpty)
        #expect(log.entries("the agent wrote a line that is not JSON-RPC; ignored").count == 1)
    }

    @Test("a line split across two reads is whole in the batch of the read that ends it, before the lines after it")
    func lineAcrossReads() async throws {
        // The agent writes its next part once told to, so that each part is a read of its own.
        let agent = try await launch("""
        import os, sys
        os.write(1, b'{"jsonrpc":"2.0","method":"first"}\\n{"jsonrpc":"2.0","met')
        sys.stdin.readline()
        os.write(1, b'hod":"second"}\\n{"jsonrpc":"2.0","method":"third"}\\n')
        sys.stdin.readline()
        os.write(1, b'{"jsonrpc":"2.0","method":"last"}')
        """)
        guard let batches = agent.takeEventBatches() else { Issue.record("no batches"); return }
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
        let agent = try await launch("""
        import os
        os.write(1, b"".join(b'{"jsonrpc":"2.0","method":"m%d"}\\n' % n for n in range(150)))
        """)
        // Its lines are in the pipe before the reader starts (not a timer: a shorter wait only makes smaller reads),
        // so that one read holds them all.
        try await Task.sleep(for: .milliseconds(500))
        let (batches, _) = await runBatched(agent)
        let messages = batches.dropLast().flatMap(methods)
        #expect(messages == (0..<150).map { "m\($0)" })
        #expect(batches.dropLast().allSatisfy { $0.count <= 64 })
        #expect(batches.last.map(methods) == ["exited"])
    }

    @Test("requests left unanswered by a dead agent fail in its last batch, just before exited")
    func lastBatch() async throws {
        let agent = try await launch("""
        import os, signal, sys
        sys.stdin.readline()
        os.kill(os.getpid(), signal.SIGKILL)
        """)
        try agent.send(.request(JSONRPCRequest(id: .int(5), method: "anything")))
        let (batches, _) = await runBatched(agent)
        guard batches.count == 1, batches[0].count == 2, case .message(.response(let failed)) = batches[0][0],
              case .exited(let reason) = batches[0][1] else {
            Issue.record("unexpected batches \(batches)"); return
        }
        #expect(failed.id == .int(5))
        #expect(reason == "the agent process was killed by signal 9")
    }

    @Test("batches are taken once, and only before the agent runs")
    func takenBeforeRunOnly() async throws {
        let taken = try await launch("import sys; sys.stdin.readline()")
        #expect(taken.takeEventBatches() != nil)
        #expect(taken.takeEventBatches() == nil)
        taken.stop()
        await taken.run()

        let running = try await launch("""
        print('{"jsonrpc":"2.0","method":"ready"}', flush=True)
        import sys; sys.stdin.readline()
        """)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await running.run() }
            var events = running.events.makeAsyncIterator()
            guard case .message(.notification(let ready)) = await events.next(), ready.method == "ready" else {
                Issue.record("the agent did not start"); return
            }
            #expect(running.takeEventBatches() == nil)
            running.stop()
            var rest: [ACPAgentEvent] = []
            while let event = await events.next() { rest.append(event) }
            guard case .exited? = rest.last else { Issue.record("no exit on events: \(rest)"); return }
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
