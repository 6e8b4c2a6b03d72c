// EchoAgent: a small ACP agent over stdio, to run behind the bridge:
//
//     oa-bridge serve --agent "$(swift build --show-bin-path)/EchoAgent"
//
// It speaks official ACP v1 (camelCase) as NDJSON, one JSON-RPC message per line, on stdin/stdout, and logs to stderr.
// `session/prompt` echoes the prompt back as `agent_message_chunk` updates and ends with `stopReason: end_turn`.
// A few prompts do more, to exercise the client side of ACP through the bridge:
//   "read PATH"          asks the client for fs/read_text_file and echoes the content (or the error)
//   "write PATH TEXT"    asks the client for fs/write_text_file
//   "ask"                asks session/request_permission and reports the chosen option
//   "crash"              exits with status 42 in the middle of the turn (to see the bridge handle a dead agent)

import BridgeRPC
import Foundation

/// Writes one message as one line on stdout.
func emit(_ message: JSONRPCMessage) {
    FileHandle.standardOutput.write(Data((message.jsonText + "\n").utf8))
}

/// Logs to stderr (the bridge puts these lines in its log).
func log(_ text: String) {
    FileHandle.standardError.write(Data(("echo-agent: " + text + "\n").utf8))
}

/// The agent's state; single-threaded, so a plain class.
final class EchoAgent {
    var sessions: [String: String] = [:]  // sessionId -> cwd
    var cancelled: Set<String> = []
    var nextSession = 1
    var nextRequest: Int64 = 1
    /// Messages read while waiting for a response, handled afterwards.
    var backlog: [JSONRPCMessage] = []

    func readMessage() -> JSONRPCMessage? {
        if !backlog.isEmpty { return backlog.removeFirst() }
        while let line = readLine(strippingNewline: true) {
            if line.isEmpty { continue }
            switch JSONRPCFrame(parsing: line) {
            case .single(.message(let message)):
                return message
            case .single(.invalid(let id, let error)):
                emit(.response(JSONRPCResponse(id: id, error: error)))
            case .batch:
                emit(.response(JSONRPCResponse(id: .null, error: .invalidRequest("this agent does not take batches"))))
            }
        }
        return nil
    }

    /// Sends a request to the client and waits for its response, queueing whatever else arrives meanwhile.
    func ask(_ method: String, _ params: JSONValue) -> JSONRPCResponse? {
        let id = JSONRPCID.string("echo-\(nextRequest)")
        nextRequest += 1
        emit(.request(JSONRPCRequest(id: id, method: method, params: params)))
        var held: [JSONRPCMessage] = []
        defer { backlog.append(contentsOf: held) }
        while let line = readLine(strippingNewline: true) {
            guard case .single(.message(let message)) = JSONRPCFrame(parsing: line) else { continue }
            if case .response(let response) = message, response.id == id { return response }
            if case .notification(let notification) = message, notification.method == "session/cancel",
               let session = notification.params?["sessionId"]?.stringValue {
                cancelled.insert(session)
            }
            held.append(message)
        }
        return nil
    }

    func say(_ session: String, _ text: String) {
        emit(.notification(JSONRPCNotification(method: "session/update", params: [
            "sessionId": .string(session),
            "update": ["sessionUpdate": "agent_message_chunk", "content": ["type": "text", "text": .string(text)]],
        ])))
    }

    func handle(_ request: JSONRPCRequest) {
        let params = request.params ?? [:]
        switch request.method {
        case "initialize":
            emit(.response(JSONRPCResponse(id: request.id, result: [
                "protocolVersion": 1,
                "agentCapabilities": ["loadSession": false, "promptCapabilities": ["image": false, "audio": false, "embeddedContext": false]],
                "authMethods": [],
                "agentInfo": ["name": "echo-agent", "title": "Echo Agent (oa-bridge example)", "version": "0.1.0"],
            ])))
        case "session/new":
            let id = "echo-\(nextSession)"
            nextSession += 1
            sessions[id] = params["cwd"]?.stringValue ?? FileManager.default.currentDirectoryPath
            emit(.response(JSONRPCResponse(id: request.id, result: ["sessionId": .string(id)])))
        case "session/set_mode":
            emit(.response(JSONRPCResponse(id: request.id, result: [:])))
        case "session/prompt":
            guard let session = params["sessionId"]?.stringValue, sessions[session] != nil else {
                emit(.response(JSONRPCResponse(id: request.id, error: .invalidParams("unknown sessionId"))))
                return
            }
            cancelled.remove(session)
            let text = (params["prompt"]?.arrayValue ?? []).compactMap { $0["type"] == "text" ? $0["text"]?.stringValue : nil }.joined(separator: " ")
            let words = text.split(separator: " ").map(String.init)
            switch words.first {
            case "crash":
                say(session, "crashing now")
                log("crashing on request")
                exit(42)
            case "read" where words.count > 1:
                let answer = ask("fs/read_text_file", ["sessionId": .string(session), "path": .string(words[1])])
                if let content = answer?.result?["content"]?.stringValue {
                    say(session, "content: " + content)
                } else {
                    say(session, "error: " + (answer?.error?.message ?? "no answer"))
                }
            case "write" where words.count > 2:
                let answer = ask("fs/write_text_file", ["sessionId": .string(session), "path": .string(words[1]), "content": .string(words[2...].joined(separator: " "))])
                say(session, answer?.error.map { "error: " + $0.message } ?? "written")
            case "ask":
                let answer = ask("session/request_permission", [
                    "sessionId": .string(session),
                    "toolCall": ["toolCallId": "echo-call", "title": "Say yes", "kind": "other", "status": "pending"],
                    "options": [["optionId": "yes", "name": "Yes", "kind": "allow_once"], ["optionId": "no", "name": "No", "kind": "reject_once"]],
                ])
                let outcome = answer?.result?["outcome"]
                say(session, "outcome: " + (outcome?["optionId"]?.stringValue ?? outcome?["outcome"]?.stringValue ?? "none"))
            default:
                for word in words { say(session, word + " ") }
            }
            let stop = cancelled.contains(session) ? "cancelled" : "end_turn"
            emit(.response(JSONRPCResponse(id: request.id, result: ["stopReason": .string(stop)])))
        default:
            emit(.response(JSONRPCResponse(id: request.id, error: .methodNotFound(request.method))))
        }
    }

    func run() {
        log("ready")
        while let message = readMessage() {
            switch message {
            case .request(let request):
                handle(request)
            case .notification(let notification):
                if notification.method == "session/cancel", let session = notification.params?["sessionId"]?.stringValue {
                    cancelled.insert(session)
                }
            case .response:
                break
            }
        }
        log("stdin closed, bye")
    }
}

EchoAgent().run()
