import BridgeACP
import BridgeRPC
import Foundation
import Logging
import Synchronization
import Testing

enum AgentTestError: Error { case timeout }

@Suite("Agents", .timeLimit(.minutes(1)), .tags(.externalTool))
struct AgentTests {
    @Test("the demo agent streams the prompt, shows a tool call, asks permission and ends the turn")
    func demoAgentTurn() async throws {
        let agent = DemoAgent(chunkDelay: .milliseconds(1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await agent.run() }
            var events = agent.events.makeAsyncIterator()
            try agent.send(.request(JSONRPCRequest(id: .int(1), method: "initialize", params: ["protocolVersion": 1])))
            guard case .message(.response(let initialized)) = await events.next() else {
                Issue.record("no initialize answer")
                return
            }
            #expect(initialized.result?["agentInfo"]?["title"]?.stringValue?.contains("demo agent") == true)

            try agent.send(.request(JSONRPCRequest(id: .int(2), method: "session/new", params: ["cwd": "/tmp", "mcpServers": []])))
            guard case .message(.response(let created)) = await events.next(), let session = created.result?["sessionId"]?.stringValue else {
                Issue.record("no session")
                return
            }
            try agent.send(.request(JSONRPCRequest(id: .int(3), method: "session/prompt", params: [
                "sessionId": .string(session), "prompt": [["type": "text", "text": "hello there"]],
            ])))
            var chunks = ""
            var sawToolCall = false
            var stopReason: String?
            while stopReason == nil {
                guard let event = await events.next() else { break }
                switch event {
                case .message(.notification(let update)):
                    #expect(update.method == "session/update")
                    let body = update.params?["update"]
                    if body?["sessionUpdate"] == "agent_message_chunk" { chunks += body?["content"]?["text"]?.stringValue ?? "" }
                    if body?["sessionUpdate"] == "tool_call" { sawToolCall = true }
                case .message(.request(let ask)):
                    #expect(ask.method == "session/request_permission")
                    #expect(sawToolCall)
                    try agent.send(.response(JSONRPCResponse(id: ask.id, result: ["outcome": ["outcome": "selected", "optionId": "allow"]])))
                case .message(.response(let response)):
                    #expect(response.id == .int(3))
                    stopReason = response.result?["stopReason"]?.stringValue
                case .exited:
                    Issue.record("the demo agent exited")
                }
            }
            #expect(chunks.hasPrefix("You said: hello there"))
            #expect(stopReason == "end_turn")
            await agent.stop()
            group.cancelAll()
        }
    }

    @Test("the demo agent's Quiet mode echoes and asks nothing; back in Default it asks again (issue 29 item 9)")
    func demoAgentQuietMode() async throws {
        // Fails on the old code: Quiet mode still showed the tool call and asked for permission.
        let agent = DemoAgent(chunkDelay: .milliseconds(1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await agent.run() }
            var events = agent.events.makeAsyncIterator()
            try agent.send(.request(JSONRPCRequest(id: .int(1), method: "session/new", params: ["cwd": "/tmp", "mcpServers": []])))
            guard case .message(.response(let created)) = await events.next(), let session = created.result?["sessionId"]?.stringValue else {
                Issue.record("no session")
                return
            }
            try agent.send(.request(JSONRPCRequest(id: .int(2), method: "session/set_mode", params: ["sessionId": .string(session), "modeId": "loud"])))
            guard case .message(.response(let refused)) = await events.next() else {
                Issue.record("no answer")
                return
            }
            #expect(refused.error != nil, "an unknown mode is refused")
            var nextID: Int64 = 3
            for (mode, asks) in [("quiet", false), ("default", true)] {
                try agent.send(.request(JSONRPCRequest(id: .int(nextID), method: "session/set_mode", params: ["sessionId": .string(session), "modeId": .string(mode)])))
                nextID += 1
                try agent.send(.request(JSONRPCRequest(id: .int(nextID), method: "session/prompt", params: [
                    "sessionId": .string(session), "prompt": [["type": "text", "text": "hi"]],
                ])))
                let promptID = JSONRPCID.int(nextID)
                nextID += 1
                var asked = false
                var sawToolCall = false
                var stopReason: String?
                while stopReason == nil {
                    guard let event = await events.next() else { break }
                    switch event {
                    case .message(.notification(let update)):
                        if update.params?["update"]?["sessionUpdate"] == "tool_call" { sawToolCall = true }
                    case .message(.request(let ask)):
                        asked = true
                        try agent.send(.response(JSONRPCResponse(id: ask.id, result: ["outcome": ["outcome": "selected", "optionId": "reject"]])))
                    case .message(.response(let response)):
                        if response.id == promptID { stopReason = response.result?["stopReason"]?.stringValue }
                    case .exited:
                        Issue.record("the demo agent exited")
                        stopReason = "exited"
                    }
                }
                #expect(asked == asks, "\(mode): asked \(asked)")
                #expect(sawToolCall == asks, "\(mode): tool call \(sawToolCall)")
                #expect(stopReason == "end_turn")
            }
            await agent.stop()
            group.cancelAll()
        }
    }

    @Test("a stdio agent relays NDJSON both ways and stderr does not disturb it")
    func stdioAgentRoundTrip() async throws {
        // Answers each request with its own id and params (taken from the line it read), says on stderr what it got,
        // and exits with status 3 on `die`: a real process and real pipes, in sh.
        let script = #"""
        while IFS= read -r line; do
          method=$(printf '%s' "$line" | sed -n 's/.*"method":"\([^"]*\)".*/\1/p')
          echo "got $method" >&2
          [ "$method" = die ] && exit 3
          id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
          params=$(printf '%s' "$line" | sed -n 's/.*"params":\({[^}]*}\).*/\1/p')
          printf '{"jsonrpc":"2.0","id":%s,"result":{"echo":%s}}\n' "$id" "$params"
        done
        """#
        let agent = try await StdioAgent.launch(StdioAgentConfiguration(command: ["/bin/sh", "-c", script]), logger: Logger(label: "test.stdio"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await agent.run() }
            var events = agent.events.makeAsyncIterator()
            try agent.send(.request(JSONRPCRequest(id: .int(1), method: "ping", params: ["a": 1])))
            guard case .message(.response(let response)) = await events.next() else {
                Issue.record("no answer")
                return
            }
            #expect(response.id == .int(1))
            #expect(response.result == ["echo": ["a": 1]])

            // A request left unanswered when the process dies fails with an error saying so.
            try agent.send(.request(JSONRPCRequest(id: .int(2), method: "die", params: [:])))
            guard case .message(.response(let failed)) = await events.next() else {
                Issue.record("no failure")
                return
            }
            #expect(failed.id == .int(2))
            #expect(failed.error?.message.contains("exited with status 3") == true)
            guard case .exited(let reason) = await events.next() else {
                Issue.record("no exit event")
                return
            }
            #expect(reason.contains("status 3"))
            #expect(await events.next() == nil)
            do {
                try agent.send(.notification(JSONRPCNotification(method: "late")))
                Issue.record("sending to a dead agent should fail")
            } catch {
                #expect("\(error)".contains("not running"))
            }
            group.cancelAll()
        }
    }

    @Test("a missing agent command fails to launch with a message that says what to do")
    func missingCommand() async {
        do {
            _ = try await StdioAgent.launch(StdioAgentConfiguration(command: ["no-such-agent-binary-xyz"]), logger: Logger(label: "test"))
            Issue.record("should not launch")
        } catch {
            guard case .launchFailed = error else {
                Issue.record("expected launchFailed, got \(error)")
                return
            }
            #expect(error.description.contains("not found on PATH"))
        }
    }

    @Test("cancelling run() stops the agent process")
    func cancelStops() async throws {
        let agent = try await StdioAgent.launch(StdioAgentConfiguration(
            command: ["/bin/sh", "-c", #"echo '{"jsonrpc":"2.0","method":"ready"}'; exec sleep 30"#], terminationGrace: .seconds(20)),
            logger: Logger(label: "test"))
        let started = ContinuousClock.now
        let (ran, ranSink) = AsyncStream.makeStream(of: Void.self)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await agent.run()
                ranSink.finish()
            }
            // Cancelled once it runs (its first line read), not at an instant picked by a sleep.
            var events = agent.events.makeAsyncIterator()
            guard case .message(.notification(let ready)) = await events.next(), ready.method == "ready" else {
                Issue.record("the agent did not start")
                group.cancelAll()
                return
            }
            group.cancelAll()
            for await _ in ran {}
            var rest: [ACPAgentEvent] = []
            while let event = await events.next() { rest.append(event) }
            // SIGTERM ends the sleep (the grace period before SIGKILL is longer than the test's limit).
            #expect(rest == [.exited(reason: "the agent process was killed by signal 15")])
        }
        #expect(ContinuousClock.now - started < .seconds(15))
    }
}
