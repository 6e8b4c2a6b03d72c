import BridgeRPC
import BridgeTestKit
import Foundation
import Logging
import Synchronization
import Testing

@testable import BridgeClient

/// What `connect --stdio`'s relay answers by itself, without a bridge: messages before `initialize`, lines that are not
/// JSON-RPC, no bridge to try; and the idempotency key it puts on prompts.
///
/// The relaying itself is tested with the official ACP SDK against a real bridge (Tests/system/test_acp_stdio.py).
@Suite("ACPRelay on its own", .tags(.unit))
struct ACPRelayTests {
    /// The lines the relay wrote to the editor, parsed.
    final class Editor: Sendable {
        let lines = Mutex<[JSONValue]>([])
        /// Told of every line, so a test waits for the answer it expects rather than for a time.
        let changes = ChangeSignal()
        var output: ACPRelay.Output {
            { line in
                let value = (try? JSONValue(parsing: line)) ?? .string(line)
                self.lines.withLock { $0.append(value) }
                self.changes.notify()
            }
        }
        var all: [JSONValue] { lines.withLock { $0 } }
    }

    func relay(_ editor: Editor, candidates: [BridgeEndpoint] = []) -> ACPRelay {
        ACPRelay(candidates: candidates, options: BridgeSessionOptions(reconnectPolicy: ReconnectPolicy(maximumAttempts: 0)),
                 credential: { nil }, logger: Logger(label: "test"), noCandidates: "no bridge found: give an address", output: editor.output)
    }

    @Test("a request before initialize is answered -32600 with its own id, a notification is dropped, nothing is sent")
    func beforeInitialize() async {
        let editor = Editor()
        let relay = relay(editor)
        await relay.receive(line: #"{"jsonrpc":"2.0","id":"n1","method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#)
        await relay.receive(line: #"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#)
        #expect(editor.all.count == 1)
        #expect(editor.all.first?["id"] == "n1")
        #expect(editor.all.first?["error"]?["code"] == .int(-32600))
    }

    @Test("a line that is not JSON gets -32700 with a null id; blank lines are ignored")
    func garbage() async {
        let editor = Editor()
        let relay = relay(editor)
        await relay.receive(line: "   ")
        await relay.receive(line: "{not json")
        #expect(editor.all.count == 1)
        #expect(editor.all.first?["id"] == .null)
        #expect(editor.all.first?["error"]?["code"] == .int(-32700))
    }

    @Test("initialize with no bridge to try is answered at once with an error that says why, with the editor's id")
    func noCandidates() async throws {
        let editor = Editor()
        let relay = relay(editor)
        await relay.receive(line: #"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#)
        _ = await editor.changes.wait(timeout: .seconds(10)) { !editor.all.isEmpty }
        let answer = try #require(editor.all.first)
        #expect(answer["id"] == .int(0))
        #expect(answer["error"]?["message"]?.stringValue?.contains("no bridge found: give an address") == true)
        #expect(answer["error"]?["data"]?["reason"] == "unreachable")
    }

    @Test("a prompt gets _meta.oa.idempotencyKey; an editor's own key and its other _meta are kept")
    func idempotencyKey() throws {
        let plain: JSONValue = ["sessionId": "s", "prompt": []]
        let keyed = try #require(ACPRelay.withIdempotencyKey(plain))
        let key = try #require(keyed["_meta"]?["oa"]?["idempotencyKey"]?.stringValue)
        #expect((1...128).contains(key.count))
        #expect(ACPRelay.withIdempotencyKey(plain)?["_meta"]?["oa"]?["idempotencyKey"]?.stringValue != key, "one key per prompt")

        let own: JSONValue = ["sessionId": "s", "prompt": [], "_meta": ["trace": "t-1", "oa": ["idempotencyKey": "mine"]]]
        let kept = try #require(ACPRelay.withIdempotencyKey(own))
        #expect(kept["_meta"]?["oa"]?["idempotencyKey"] == "mine")
        #expect(kept["_meta"]?["trace"] == "t-1")
    }

    @Test("the bridge's 'not attached' error is told apart from other -32602s by its data")
    func notAttached() {
        let error = JSONRPCError(code: -32602, message: "session s is not attached to this connection", data: ["sessionId": "s"])
        #expect(BridgeClientSession.isNotAttached(error, sessionID: "s"))
        #expect(!BridgeClientSession.isNotAttached(error, sessionID: "t"))
        #expect(!BridgeClientSession.isNotAttached(JSONRPCError(code: -32602, message: "bad cwd", data: ["sessionId": "s", "path": "/x"]), sessionID: "s"))
    }
}
