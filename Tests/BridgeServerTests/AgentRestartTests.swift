import BridgeACP
import BridgeRPC
import BridgeServer
import BridgeTestKit
import Foundation
import Logging
import Synchronization
import Testing

/// A `session/new` that finds the agent dead before the bridge has seen its process end (issue 15: -32603 "could not
/// write to the agent" within ~100 ms of a SIGKILL) restarts the agent and goes through.
///
/// The restart logic runs on in-process agents (``ScriptedAgent``) that stop reading (and answering) while they live
/// on, as a process whose pipes closed before its end is reported: the window stays open for as long as the test needs,
/// with no timing in the test. One test crashes a real process (`/bin/sh`), and one checks the stdio agent's side of a
/// failed write.
@Suite("Agent restart", .timeLimit(.minutes(1)), .tags(.loopback, .externalTool))
struct AgentRestartTests {
    /// Agents numbered by their start, so a test tells which one answered: sessions are `<agent>-<n>`.
    ///
    /// A prompt `deaf` makes the agent stop reading before it answers (a client that has the answer and sends more
    /// finds it deaf already); `mute`: it stops writing too, after the answer. With `muteAfterInitialize` every agent
    /// stops reading and writing right after answering `initialize`.
    static func agents(muteAfterInitialize: Bool = false) -> @Sendable () -> any ACPAgent {
        let started = Mutex(0)
        return {
            let number = started.withLock {
                $0 += 1
                return $0
            }
            let sessions = Mutex(0)
            return ScriptedAgent { message, peer in
                guard case .request(let request) = message else { return }
                switch request.method {
                case "initialize":
                    peer.respond(to: request.id, result: ["protocolVersion": 1, "agentCapabilities": [:], "authMethods": []])
                    if muteAfterInitialize {
                        peer.stopReading()
                        peer.stopWriting()
                    }
                case "session/new":
                    let count = sessions.withLock {
                        $0 += 1
                        return $0
                    }
                    peer.respond(to: request.id, result: ["sessionId": .string("\(number)-\(count)")])
                case "session/prompt":
                    let text = request.params?["prompt"]?.arrayValue?.first?["text"]?.stringValue
                    if text == "deaf" || text == "mute" { peer.stopReading() }
                    peer.respond(to: request.id, result: ["stopReason": "end_turn"])
                    if text == "mute" { peer.stopWriting() }
                default:
                    peer.respond(to: request.id, error: .methodNotFound(request.method))
                }
            }
        }
    }

    /// Which agent (or process) answered: the part of a session id before its `-`.
    static func agent(of session: String) -> Substring {
        session.split(separator: "-").first ?? ""
    }

    @Test("a session/new sent to an agent that stopped reading its stdin starts a new agent and goes through", arguments: ["deaf", "mute"])
    func newSessionAfterDeath(_ how: String) async throws {
        try await TestBridge.with(configure: { $0.inProcessAgent = AgentRestartTests.agents() }, { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                let first = try await client.newSession(seed: false, id: "s1")
                client.prompt(seed: false, session: first, text: how, id: "p1")
                let (done, _) = try await client.collect(until: "p1")
                #expect(done["result"]?["stopReason"] == "end_turn")

                // Before the fix: -32603 "could not write to the agent: ..." (the agent never ends here).
                client.send(JSONValue.object(["jsonrpc": "2.0", "id": "s2", "method": "session/new", "params": [:]]))
                let (answer, _) = try await client.collect(until: "s2", timeout: .seconds(30))
                let second = try #require(answer["result"]?["sessionId"]?.stringValue, "session/new failed: \(answer)")
                #expect(AgentRestartTests.agent(of: second) != AgentRestartTests.agent(of: first))

                // The new agent works, and the old session is gone with the old agent.
                client.prompt(seed: false, session: second, text: "hello", id: "p2")
                #expect(try await client.collect(until: "p2").0["result"]?["stopReason"] == "end_turn")
                client.prompt(seed: false, session: first, text: "hello", id: "p3")
                #expect(try await client.collect(until: "p3").0["error"] != nil)
            }
        })
    }

    /// Whichever way the request meets the agents' deaths (refused before it is sent, written and lost, or written
    /// in vain and sent again once), it ends in an error; an unbounded replay would start agent after agent.
    @Test("a session/new that no agent reads is answered with an error, not sent to agent after agent")
    func replayIsBounded() async throws {
        let starts = Mutex(0)
        let agents = AgentRestartTests.agents(muteAfterInitialize: true)
        try await TestBridge.with(configure: {
            $0.inProcessAgent = {
                starts.withLock { $0 += 1 }
                return agents()
            }
        }, { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                client.send(JSONValue.object(["jsonrpc": "2.0", "id": "s1", "method": "session/new", "params": [:]]))
                let (answer, _) = try await client.collect(until: "s1", timeout: .seconds(30))
                #expect(answer["error"]?["code"] == .int(Int64(JSONRPCError.internalErrorCode)), "\(answer)")
            }
        })
        // The first agent (mute already), the one started for the request (deaf: written in vain) and the one it is
        // sent to again (deaf too: final); an unbounded replay would go on starting agents.
        #expect(starts.withLock { $0 } <= 3)
    }

    /// The agent of the restart test with a real process: it answers by the method named on each line and is killed
    /// by a signal (SIGKILL, from itself) on the prompt `crash`; its sessions are `<pid>-<n>`.
    static let crashingAgent = #"""
    n=0
    while IFS= read -r line; do
      id=$(printf '%s' "$line" | sed -n 's/^.*"id":\([0-9][0-9]*\).*$/\1/p')
      case $line in
        *'"crash"'*) kill -KILL $$ ;;
        *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}}\n' "$id" ;;
        *'session\/new'* | *'session/new'*) n=$((n + 1)); printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"%s-%s"}}\n' "$id" $$ $n ;;
        *'"id":'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\n' "$id" ;;
      esac
    done
    """#

    @Test("an agent process killed by a signal: the phone is told, and the next session/new starts a new process")
    func crashedProcess() async throws {
        try await TestBridge.with(configure: { $0.agentCommand = ["/bin/sh", "-c", AgentRestartTests.crashingAgent] }, { port, _ in
            try await TestClient.with(port: port) { client in
                try await client.initialize(seed: false)
                let first = try await client.newSession(seed: false, id: "s1")
                client.prompt(seed: false, session: first, text: "crash", id: "p1")
                let (failed, frames) = try await client.collect(until: "p1", timeout: .seconds(30))
                #expect(failed["error"] != nil, "\(failed)")
                var told = frames.first { $0["method"] == "_oa/agent_exited" }
                if told == nil { told = try await client.next(timeout: .seconds(30)) { $0["method"] == "_oa/agent_exited" }.0 }
                #expect(told?["params"]?["reason"]?.stringValue?.contains("killed by signal 9") == true, "\(String(describing: told))")

                let second = try await client.newSession(seed: false, id: "s2")
                #expect(AgentRestartTests.agent(of: second) != AgentRestartTests.agent(of: first))
                client.prompt(seed: false, session: second, text: "hello", id: "p2")
                #expect(try await client.collect(until: "p2").0["result"]?["stopReason"] == "end_turn")
            }
        })
    }

    /// What the hub's replay rests on: a request whose write failed is kept (once) with its error response sent, and
    /// the agent says it can take no more; one sent with `resend` is not kept again.
    @Test("a request whose write failed can be taken back once; a resent one cannot")
    func undeliveredRequest() async throws {
        // Stdin closed (its pipe named first), then a sleep that lasts until the test stops the agent.
        let agent = try await StdioAgent.launch(StdioAgentConfiguration(command: ["/bin/sh", "-c", #"""
        pipe=$(readlink /proc/$$/fd/0)
        exec 0<&-
        echo "{\"jsonrpc\":\"2.0\",\"method\":\"closed\",\"params\":{\"pipe\":\"$pipe\"}}"
        exec sleep 30
        """#], terminationGrace: .milliseconds(200)), logger: Logger(label: "test.agent"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await agent.run() }
            var events = agent.events.makeAsyncIterator()
            guard case .message(.notification(let closed)) = await events.next(), closed.method == "closed",
                  let pipe = closed.params?["pipe"]?.stringValue, pipe.hasPrefix("pipe:")
            else {
                Issue.record("the agent did not start")
                return
            }
            // A write fails only once no process can read the pipe. A child another test forks at the moment this
            // agent starts holds a copy of every descriptor of this process until it closes them (or execs); on a
            // loaded machine that took long enough for the write to land in the pipe (twice in full runs).
            try #require(await Self.noOtherProcessHolds(pipe, within: .seconds(20)), "\(pipe) is still open elsewhere")
            try agent.send(.request(JSONRPCRequest(id: .int(7), method: "session/new", params: ["cwd": "/"])))
            guard case .message(.response(let failed)) = await events.next() else {
                Issue.record("no error response")
                return
            }
            #expect(failed.id == .int(7) && failed.error != nil)
            #expect(agent.endReason != nil)
            let kept = agent.takeUndelivered(.int(7))
            #expect(kept?.method == "session/new" && kept?.params?["cwd"] == "/")
            #expect(agent.takeUndelivered(.int(7)) == nil)

            // The agent is not stopped by its failed write (the hub stops it), so a resend still queues and fails.
            try agent.resend(JSONRPCRequest(id: .int(8), method: "session/new"))
            guard case .message(.response(let again)) = await events.next() else {
                Issue.record("no error response")
                return
            }
            #expect(again.id == .int(8) && again.error != nil)
            #expect(agent.takeUndelivered(.int(8)) == nil)
            group.cancelAll()
        }
    }

    /// Whether, within `limit`, no process but this one has `pipe` (`pipe:[inode]`) open: read from /proc.
    static func noOtherProcessHolds(_ pipe: String, within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        let me = "\(getpid())"
        let files = FileManager.default
        while ContinuousClock.now < deadline {
            let processes = ((try? files.contentsOfDirectory(atPath: "/proc")) ?? []).filter { $0 != me && Int($0) != nil }
            let held = processes.contains { process in
                let descriptors = (try? files.contentsOfDirectory(atPath: "/proc/\(process)/fd")) ?? []
                return descriptors.contains { (try? files.destinationOfSymbolicLink(atPath: "/proc/\(process)/fd/\($0)")) == pipe }
            }
            if !held { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }
}
