import BridgeRPC
import BridgeTerminal
import BridgeWorkspace
import Testing
@testable import BridgeServer

/// Issue 31 item 5 on the server's side: the errors the agent and the phone get (JSON-RPC answers) travel where no
/// command line is, so they name the bridge's setting in words and by its config file key in `data.setting` (or
/// `data.reason`), and never a flag of `oa-bridge serve`.
@Suite("server-side errors name settings, not flags", .tags(.unit))
struct ServerSettingWordsTests {
    /// Whether `text` names a command-line flag (`--word`).
    private static func namesFlag(_ text: String) -> Bool { text.contains(/--[a-z]/) }

    @Test("terminal errors: no flag in any answer; terminals off and unconfinable carry their setting")
    func terminalErrors() {
        let errors: [TerminalError] = [
            .disabled(method: "terminal/create"), .badParams(method: "terminal/create", detail: "command"),
            .unknownSession("s"), .unknownTerminal(session: "s", terminal: "t"), .tooManyInSession(session: "s", limit: 2),
            .tooMany(limit: 3), .badDirectory(.invalidParams("x")), .launchFailed(command: "ls", reason: "gone"),
            .unconfinable(reason: "no Landlock"),  // spawnFailed: "could not start ls: " and the errno's words
        ]
        for error in errors {
            #expect(!Self.namesFlag(error.rpcError.message), "\(error): \(error.rpcError.message)")
            #expect(error.rpcError.data?["setting"]?.stringValue == error.setting?.rawValue, "\(error)")
        }
        let off = TerminalError.disabled(method: "terminal/create")
        #expect(off.setting == .terminal && off.rpcError.data?["setting"] == "terminal")
        #expect(off.rpcError.data?["method"] == "terminal/create" && off.rpcError.code == -32601)
        let unconfinable = TerminalError.unconfinable(reason: "no Landlock")
        #expect(unconfinable.setting == .terminalConfinement && unconfinable.rpcError.data?["setting"] == "terminal-confinement")
        #expect(unconfinable.rpcError.message.contains("terminal confinement: unconfined"))
    }

    @Test("file errors: no flag in any answer; a path outside the scope and a scope without its directory carry fs-scope")
    func fileErrors() {
        let errors: [WorkspaceFileError] = [
            .containsNUL(path: "a"), .tooLong(path: "a", bytes: 5000, limit: 4096), .tooManyComponents(path: "a", count: 9, limit: 8),
            .parentComponent(path: "../a"), .outside(path: "/etc/passwd", root: "/w", why: "an absolute path"), .notFound(path: "a"),
            .danglingSymbolicLink(path: "a"), .notADirectory(path: "a"), .notARegularFile(path: "a"), .notUTF8(path: "a"),
            .tooManySymbolicLinks(path: "a"), .system(path: "a", operation: "read", errno: 5), .timedOut(path: "a", limit: .seconds(5)),
            .abandoned(path: "a"), .bridgeFile(path: "/s/key.pem", protected: "/s"), .missingWorkspace(directory: "/nowhere"),
            .missingScopeDirectory(scope: .home, directory: nil),
        ]
        for error in errors {
            #expect(!Self.namesFlag(error.rpcError.message), "\(error): \(error.rpcError.message)")
            #expect(error.rpcError.data?["setting"]?.stringValue == error.setting?.rawValue, "\(error)")
        }
        let outside = WorkspaceFileError.outside(path: "/etc/passwd", root: "/w", why: "an absolute path")
        #expect(outside.setting == .fileScope && outside.rpcError.data?["setting"] == "fs-scope")
        #expect(outside.rpcError.message.contains("file scope: home or any"))
        #expect(WorkspaceFileError.missingScopeDirectory(scope: .home, directory: nil).setting == .fileScope)
        #expect(WorkspaceFileError.bridgeFile(path: "/s/key.pem", protected: "/s").setting == nil)
    }

    @Test("_oa/me and _oa/logout with authentication off: 'auth: none' in words, data.setting auth, no flag")
    func noDevice() {
        for method in ["_oa/me", "_oa/logout"] {
            let error = BridgeErrors.noDevice(method)
            #expect(!Self.namesFlag(error.message), "\(error.message)")
            #expect(error.message == "\(method) needs a paired device: this bridge runs without authentication (auth: none in its settings)")
            #expect(error.data?["setting"] == "auth" && error.data?["method"]?.stringValue == method)
            #expect(error.code == BridgeMethod.noDeviceErrorCode)
        }
    }

    @Test("a session dropped for retention: the bound's setting in words and its key, no flag; data.reason stays the cause")
    func retention() {
        let expected: [(RetentionReason, String)] = [
            (.idleTimeout, "idle-session-timeout"), (.maxIdleSessions, "max-idle-sessions"), (.maxIdleReplayBytes, "max-idle-replay-bytes"),
        ]
        for (reason, key) in expected {
            let error = BridgeErrors.sessionDropped("s1", reason: reason, retention: SessionRetention())
            #expect(!Self.namesFlag(error.message), "\(reason): \(error.message)")
            #expect(error.message.contains("bridge's settings (\(key))"), "\(reason): \(error.message)")
            #expect(error.data?["reason"]?.stringValue == reason.rawValue)
        }
    }
}
