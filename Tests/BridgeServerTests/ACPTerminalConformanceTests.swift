import BridgeRPC
import BridgeSandbox
import BridgeServer
import BridgeTerminal
import BridgeTestKit
import Foundation
import Testing

extension TestClient {
    /// Has the scripted agent send `method` with `params` (the prompt `call <method> <params>`); returns what it got:
    /// the result as JSON, or `error: <code> …`, and the frames that came before the prompt's answer.
    func agentCall(seed: Bool, session: String, _ method: String, _ params: JSONValue, id: JSONValue = "call") async throws -> (String, [JSONValue]) {
        prompt(seed: seed, session: session, text: "call \(method) \(params.jsonText)", id: id)
        let (done, frames) = try await collect(until: id)
        #expect(done["result"] != nil, "the prompt failed: \(done)")
        let text = chunkText(frames, seed: seed)
        return (text.hasPrefix("call ") ? String(text.dropFirst(5)) : text, frames)
    }

    /// ``agentCall(seed:session:_:_:id:)`` expecting a result, parsed.
    func agentResult(seed: Bool, session: String, _ method: String, _ params: JSONValue, id: JSONValue = "call") async throws -> (JSONValue, [JSONValue]) {
        let (text, frames) = try await agentCall(seed: seed, session: session, method, params, id: id)
        return (try JSONValue(parsing: text), frames)
    }

    /// `_oa/terminal/output` notifications of `terminal` until (and with) the one carrying the exit status (either
    /// spelling), within `timeout`; `seen` are frames read before that may hold some.
    func terminalOutput(_ terminal: String, seen: [JSONValue] = [], timeout: Duration = TestBounds.notUnderTest) async throws -> [JSONValue] {
        func mine(_ frame: JSONValue) -> Bool {
            frame["method"] == "_oa/terminal/output"
                && (frame["params"]?["terminalId"] ?? frame["params"]?["terminal_id"]) == .string(terminal)
        }
        func last(_ frame: JSONValue) -> Bool {
            mine(frame) && (frame["params"]?["exitStatus"] ?? frame["params"]?["exit_status"]) != nil
        }
        var found = seen.filter(mine)
        if found.contains(where: last) { return found }
        let (final, skipped) = try await next(timeout: timeout, where: last)
        found += skipped.filter(mine) + [final]
        return found
    }
}

/// The output of `_oa/terminal/output` notifications, concatenated.
private func outputText(_ notifications: [JSONValue]) -> String {
    notifications.compactMap { $0["params"]?["output"]?.stringValue }.joined()
}

/// Whether process `pid` still runs (a zombie does not count).
private func isRunning(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return false }
    let state = stat[stat.index(after: close)...].split(separator: " ").first
    return state != "Z" && state != "X"
}

/// Waits (bounded) until process `pid` has ended: its pidfd tells, a zombie counts (``ProcessEnd``).
private func isGone(_ pid: Int32, within limit: Duration = .seconds(10)) async -> Bool {
    await ProcessEnd.wait(for: pid, timeout: limit)
}

/// The first integer on a line of `text`.
private func firstPID(_ text: String) -> Int32? {
    text.split(whereSeparator: \.isNewline).lazy.compactMap { Int32($0.trimmingCharacters(in: .whitespaces)) }.first
}

/// `terminal/*` served on the desktop (issue 12 item 2), from both dialects and with two phones at once; and the
/// capabilities the agent is told.
///
/// The agent is the conformance agent's script in the test's process (``InProcessScriptAgent``): what is tested is the
/// bridge's side (the SDK itself is tested by ACPConformanceTests and PythonSDKTests), and the terminals are real
/// processes.
@Suite("ACP terminals and capabilities through the bridge (scripted in-process agent)", .serialized, .timeLimit(.minutes(2)),
       .tags(.loopback))
struct ACPTerminalConformanceTests {
    /// A seed phone that creates a session and a v1 phone attached to it.
    private func twoPhones(
        configure: @escaping (inout BridgeServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (_ alice: TestClient, _ bob: TestClient, _ session: String, _ configuration: BridgeServerConfiguration) async throws -> Void
    ) async throws {
        try await InProcessScriptAgent.bridge(configure: configure) { port, configuration in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { bob in
                    try await alice.initialize(seed: true)
                    try await bob.initialize(seed: false)
                    let session = try await alice.newSession(seed: true)
                    let (loaded, _) = try await bob.call("session/load", id: "l", ["sessionId": .string(session), "cwd": "/", "mcpServers": []])
                    try #require(loaded["result"] != nil, "\(loaded)")
                    try await body(alice, bob, session, configuration)
                }
            }
        }
    }

    @Test("create, output, wait_for_exit, release: the agent gets the schema's answers, and both phones see the output and the exit as _oa/terminal/output in their dialects")
    func createOutputWaitRelease() async throws {
        try await twoPhones { alice, bob, session, _ in
            let (created, before) = try await alice.agentResult(seed: true, session: session, "terminal/create", ["command": "echo", "args": ["hello world"]])
            let terminal = try #require(created["terminalId"]?.stringValue, "\(created)")
            let (exit, during) = try await alice.agentResult(seed: true, session: session, "terminal/wait_for_exit", ["terminalId": .string(terminal)], id: "w")
            #expect(exit == ["exitCode": 0, "signal": .null])
            let (output, after) = try await alice.agentResult(seed: true, session: session, "terminal/output", ["terminalId": .string(terminal)], id: "o")
            #expect(output == ["output": "hello world\n", "truncated": false, "exitStatus": ["exitCode": 0, "signal": .null]])

            let toBob = try await bob.terminalOutput(terminal)
            #expect(outputText(toBob) == "hello world\n")
            #expect(toBob.last?["params"]?["exitStatus"] == ["exitCode": 0, "signal": .null])
            #expect(toBob.last?["params"]?["sessionId"] == .string(session))
            let toAlice = try await alice.terminalOutput(terminal, seen: before + during + after)
            #expect(outputText(toAlice) == "hello world\n")
            #expect(toAlice.last?["params"]?["exit_status"]?["exit_code"] == 0, "seed spelling: \(toAlice)")

            let (released, _) = try await alice.agentResult(seed: true, session: session, "terminal/release", ["terminalId": .string(terminal)], id: "r")
            #expect(released == [:])
            let (gone, _) = try await alice.agentCall(seed: true, session: session, "terminal/output", ["terminalId": .string(terminal)], id: "o2")
            #expect(gone.hasPrefix("error: -32002"), "a released terminal is unknown: \(gone)")
        }
    }

    @Test("terminal/kill ends the command and its children (the process group); the terminal keeps its output until released")
    func killReachesChildren() async throws {
        try await twoPhones { alice, bob, session, _ in
            let (created, _) = try await alice.agentResult(seed: true, session: session, "terminal/create", ["command": "sleep 300 & echo $!; wait"])
            let terminal = try #require(created["terminalId"]?.stringValue, "\(created)")
            let (first, _) = try await bob.next { $0["method"] == "_oa/terminal/output" && $0["params"]?["output"] != "" }
            let child = try #require(firstPID(first["params"]?["output"]?.stringValue ?? ""), "\(first)")
            #expect(isRunning(child))
            let (killed, _) = try await alice.agentResult(seed: true, session: session, "terminal/kill", ["terminalId": .string(terminal)], id: "k")
            #expect(killed == [:])
            let (exit, _) = try await alice.agentResult(seed: true, session: session, "terminal/wait_for_exit", ["terminalId": .string(terminal)], id: "w")
            #expect(exit == ["exitCode": .null, "signal": "SIGKILL"])
            #expect(await isGone(child), "the background child is killed with its group")
            let (output, _) = try await alice.agentResult(seed: true, session: session, "terminal/output", ["terminalId": .string(terminal)], id: "o")
            #expect(output["output"] == .string("\(child)\n"))
            #expect(output["exitStatus"]?["signal"] == "SIGKILL")
        }
    }

    @Test("outputByteLimit keeps the end of the output, cut at a character boundary, and says it was truncated")
    func outputLimit() async throws {
        try await twoPhones { alice, _, session, _ in
            // "abcéxy" is 61 62 63 C3 A9 78 79: the last 3 bytes start inside "é", so only "xy" is kept.
            let (created, _) = try await alice.agentResult(seed: true, session: session, "terminal/create", [
                "command": "printf", "args": ["abcéxy"], "outputByteLimit": 3,
            ])
            let terminal = try #require(created["terminalId"]?.stringValue, "\(created)")
            _ = try await alice.agentResult(seed: true, session: session, "terminal/wait_for_exit", ["terminalId": .string(terminal)], id: "w")
            let (output, _) = try await alice.agentResult(seed: true, session: session, "terminal/output", ["terminalId": .string(terminal)], id: "o")
            #expect(output["output"] == "xy")
            #expect(output["truncated"] == true)
        }
    }

    @Test("cwd must be a directory inside the session's working directory: /etc and ../ are refused, a subdirectory works")
    func confinedDirectory() async throws {
        try await twoPhones { alice, _, session, configuration in
            let root = URL(fileURLWithPath: configuration.workingDirectory).resolvingSymlinksInPath().path
            try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
            let (outside, _) = try await alice.agentCall(seed: true, session: session, "terminal/create", ["command": "pwd", "cwd": "/etc"])
            #expect(outside.hasPrefix("error: -32602"), "\(outside)")
            let (parent, _) = try await alice.agentCall(seed: true, session: session, "terminal/create", ["command": "pwd", "cwd": .string(root + "/sub/../..")], id: "c2")
            #expect(parent.hasPrefix("error: -32602"), "\(parent)")
            let (created, _) = try await alice.agentResult(seed: true, session: session, "terminal/create", ["command": "pwd", "cwd": .string(root + "/sub")], id: "c3")
            let terminal = try #require(created["terminalId"]?.stringValue, "\(created)")
            _ = try await alice.agentResult(seed: true, session: session, "terminal/wait_for_exit", ["terminalId": .string(terminal)], id: "w")
            let (output, _) = try await alice.agentResult(seed: true, session: session, "terminal/output", ["terminalId": .string(terminal)], id: "o")
            #expect(output["output"] == .string(root + "/sub\n"))
        }
    }

    @Test("terminal/release kills a running command, and so does session/close for every terminal of the session")
    func releaseAndCloseKill() async throws {
        try await twoPhones { alice, bob, session, _ in
            let (created, _) = try await alice.agentResult(seed: true, session: session, "terminal/create", ["command": "echo $$; exec sleep 300"])
            let terminal = try #require(created["terminalId"]?.stringValue)
            let (first, _) = try await bob.next { $0["method"] == "_oa/terminal/output" && $0["params"]?["terminalId"] == .string(terminal) }
            let pid = try #require(firstPID(first["params"]?["output"]?.stringValue ?? ""), "\(first)")
            #expect(isRunning(pid))
            _ = try await alice.agentResult(seed: true, session: session, "terminal/release", ["terminalId": .string(terminal)], id: "r")
            #expect(await isGone(pid), "released: killed")

            let (second, _) = try await alice.agentResult(seed: true, session: session, "terminal/create", ["command": "echo $$; exec sleep 300"], id: "c2")
            let other = try #require(second["terminalId"]?.stringValue)
            let (told, _) = try await bob.next { $0["method"] == "_oa/terminal/output" && $0["params"]?["terminalId"] == .string(other) }
            let otherPID = try #require(firstPID(told["params"]?["output"]?.stringValue ?? ""), "\(told)")
            let (closed, _) = try await bob.call("session/close", id: "close", ["sessionId": .string(session)])
            #expect(closed["result"] == [:], "\(closed)")
            #expect(await isGone(otherPID), "the session's terminals are killed when it is closed")
        }
    }

    @Test("when the agent dies, its terminals are killed")
    func agentDeathKills() async throws {
        try await twoPhones { alice, bob, session, _ in
            let (created, _) = try await alice.agentResult(seed: true, session: session, "terminal/create", ["command": "echo $$; exec sleep 300"])
            let terminal = try #require(created["terminalId"]?.stringValue)
            let (told, _) = try await bob.next { $0["method"] == "_oa/terminal/output" && $0["params"]?["terminalId"] == .string(terminal) }
            let pid = try #require(firstPID(told["params"]?["output"]?.stringValue ?? ""), "\(told)")
            alice.prompt(seed: true, session: session, text: "die", id: "die")
            _ = try await bob.next { $0["method"] == "_oa/agent_exited" }
            #expect(await isGone(pid), "the dead agent's terminal is killed")
        }
    }

    @Test("stopping the bridge kills the terminals it runs")
    func shutdownKills() async throws {
        let pid = try await InProcessScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let session = try await phone.newSession(seed: false)
                let (created, before) = try await phone.agentResult(seed: false, session: session, "terminal/create", ["command": "echo $$; exec sleep 300"])
                let terminal = try #require(created["terminalId"]?.stringValue)
                var told = before.first { $0["method"] == "_oa/terminal/output" && $0["params"]?["terminalId"] == .string(terminal) }
                if told == nil { told = try await phone.next { $0["method"] == "_oa/terminal/output" }.0 }
                return try #require(firstPID(told?["params"]?["output"]?.stringValue ?? ""), "\(String(describing: told))")
            }
        }
        #expect(await isGone(pid, within: .seconds(5)))
    }

    @Test("the agent's tool call content of type terminal reaches both phones unchanged (in each one's spelling)")
    func terminalContentPassesThrough() async throws {
        try await twoPhones { alice, bob, session, _ in
            let update: JSONValue = [
                "sessionUpdate": "tool_call", "toolCallId": "call-9", "title": "Run tests", "kind": "execute", "status": "in_progress",
                "content": [["type": "terminal", "terminalId": "term-42"]],
            ]
            alice.prompt(seed: true, session: session, text: "update \(update.jsonText)")
            let (_, frames) = try await alice.collect(until: "prompt")
            let toAlice = frames.first { $0["params"]?["update"]?["session_update"] == "tool_call" }
            #expect(toAlice?["params"]?["update"]?["content"] == [["type": "terminal", "terminal_id": "term-42"]], "\(frames)")
            let (toBob, _) = try await bob.next { $0["params"]?["update"]?["sessionUpdate"] == "tool_call" }
            #expect(toBob["params"]?["update"]?["content"] == [["type": "terminal", "terminalId": "term-42"]])
            #expect(toBob["params"]?["update"]?["toolCallId"] == "call-9")
        }
    }

    @Test("terminals turned off: the agent is told terminal false, and terminal/create is refused with -32601")
    func terminalsOff() async throws {
        try await twoPhones(configure: { $0.terminal.enabled = false }, { alice, _, session, _ in
            let (log, _) = try await alice.call("_test/log", id: "log", [:])
            #expect(log["result"]?["clientCapabilities"]?["terminal"] == false, "\(log)")
            let (refused, _) = try await alice.agentCall(seed: true, session: session, "terminal/create", ["command": "echo"])
            #expect(refused.hasPrefix("error: -32601"), "\(refused)")
        })
    }

    @Test("a kernel without Landlock (or with too old an ABI): the agent is told terminal false and terminal/create is refused with -32601")
    func terminalsWithoutLandlock() async throws {
        let probes: [@Sendable () -> Result<Int, SandboxError>] = [{ .failure(.landlockUnavailable(errno: ENOSYS)) }, { .success(2) }]
        for probe in probes {
            try await twoPhones(configure: { $0.terminal.landlockProbe = probe }, { alice, _, session, _ in
                let (log, _) = try await alice.call("_test/log", id: "log", [:])
                #expect(log["result"]?["clientCapabilities"]?["terminal"] == false, "\(log)")
                let (refused, _) = try await alice.agentCall(seed: true, session: session, "terminal/create", ["command": "echo"])
                #expect(refused.hasPrefix("error: -32601"), "\(refused)")
            })
        }
    }

    @Test("a kernel without Landlock and --terminal-confinement unconfined: the agent is told terminal true and the command runs")
    func unconfinedWithoutLandlock() async throws {
        try await twoPhones(configure: {
            $0.terminal.landlockProbe = { .failure(.landlockUnavailable(errno: ENOSYS)) }
            $0.terminal.confinement = .unconfined
        }, { alice, _, session, _ in
            let (log, _) = try await alice.call("_test/log", id: "log", [:])
            #expect(log["result"]?["clientCapabilities"]?["terminal"] == true, "\(log)")
            let (created, _) = try await alice.agentResult(seed: true, session: session, "terminal/create", ["command": "echo ran"])
            #expect(created["terminalId"] != nil, "\(created)")
        })
    }

    @Test("a session holds at most maxPerSession terminals; releasing one makes room")
    func perSessionLimit() async throws {
        try await twoPhones(configure: { $0.terminal.maxPerSession = 1 }, { alice, _, session, _ in
            let (created, _) = try await alice.agentResult(seed: true, session: session, "terminal/create", ["command": "sleep 300"])
            let terminal = try #require(created["terminalId"]?.stringValue)
            let (refused, _) = try await alice.agentCall(seed: true, session: session, "terminal/create", ["command": "true"], id: "c2")
            #expect(refused.hasPrefix("error: -32603"), "\(refused)")
            _ = try await alice.agentResult(seed: true, session: session, "terminal/release", ["terminalId": .string(terminal)], id: "r")
            let (again, _) = try await alice.agentResult(seed: true, session: session, "terminal/create", ["command": "true"], id: "c3")
            #expect(again["terminalId"] != nil, "\(again)")
        })
    }

    // MARK: capabilities

    @Test("the agent is told terminal true, auth.terminal false, and the elicitation modes the phone connected at its start advertised (url only here)")
    func capabilitiesFromPhones() async throws {
        try await InProcessScriptAgent.bridge { port, _ in
            try await TestClient.with(port: port) { alice in
                try await TestClient.with(port: port) { bob in
                    alice.send(#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"elicitation":{"url":{}}}}}"#)
                    _ = try #require(try await alice.next()["result"])
                    try await bob.initializeWithElicitation(seed: true)  // form, but after the agent started
                    let (log, _) = try await alice.call("_test/log", id: "log", [:])
                    let capabilities = log["result"]?["clientCapabilities"]
                    #expect(capabilities?["terminal"] == true, "\(log)")
                    #expect(capabilities?["auth"]?["terminal"] == false)
                    #expect(capabilities?["elicitation"] == ["url": [:]], "only what the phone connected at the start advertised")
                    #expect(capabilities?["fs"]?["writeTextFile"] == true)

                    // A url elicitation goes to the phone that advertises url only.
                    let session = try await bob.newSession(seed: true)
                    _ = try await alice.call("session/load", id: "l", ["sessionId": .string(session), "cwd": "/", "mcpServers": []])
                    bob.prompt(seed: true, session: session, text: #"call elicitation/create {"mode":"url","message":"Sign in","url":"https://example.com/login","elicitationId":"e1"}"#)
                    let (ask, _) = try await alice.next { $0["method"] == "elicitation/create" }
                    #expect(ask["params"]?["mode"] == "url")
                    alice.answer(ask, result: ["action": "accept"])
                    let (done, frames) = try await bob.collect(until: "prompt")
                    #expect(done["result"] != nil)
                    #expect(!frames.contains { $0["method"] == "elicitation/create" }, "bob advertised form only")
                    let said = chunkText(frames, seed: true)
                    #expect(said.hasPrefix("call "), "\(said)")
                    #expect(try JSONValue(parsing: String(said.dropFirst(5))) == ["action": "accept"], "\(said)")
                }
            }
        }
    }

    @Test("authenticate from a phone: the agent's own method is forwarded; a terminal method and an env_var method whose variable is not set say they must run on the desktop")
    func authenticateFromPhone() async throws {
        try await InProcessScriptAgent.bridge(auth: true) { port, _ in
            try await TestClient.with(port: port) { phone in
                let initialized = try await phone.initialize(seed: true)
                #expect(initialized["auth_methods"]?.arrayValue?.count == 3, "\(initialized)")
                let (done, _) = try await phone.call("authenticate", id: "a1", ["method_id": "oauth"])
                #expect(done["result"] != nil, "\(done)")
                let (terminal, _) = try await phone.call("authenticate", id: "a2", ["method_id": "tui"])
                #expect(terminal["error"]?["code"] == -32602, "\(terminal)")
                #expect(terminal["error"]?["data"]?["runs_on"] == "desktop")
                #expect(terminal["error"]?["message"]?.stringValue?.contains("--login") == true)
                let (key, _) = try await phone.call("authenticate", id: "a3", ["method_id": "key"])
                #expect(key["error"]?["data"]?["missing"] == ["SCRIPT_TEST_KEY"], "\(key)")
                let (log, _) = try await phone.call("_test/log", id: "log", [:])
                #expect(log["result"]?["authenticated"] == ["oauth"], "only the agent's own method reached it: \(log)")
            }
        }
        try await InProcessScriptAgent.bridge(auth: true, configure: { $0.agentEnvironment = ["SCRIPT_TEST_KEY": "set"] }, { port, _ in
            try await TestClient.with(port: port) { phone in
                try await phone.initialize(seed: false)
                let (key, _) = try await phone.call("authenticate", id: "a", ["methodId": "key"])
                #expect(key["result"] != nil, "the variable is set on the desktop: forwarded: \(key)")
            }
        })
    }
}
