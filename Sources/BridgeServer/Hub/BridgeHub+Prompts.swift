import BridgeACP
import BridgeRPC
import Logging

/// The whole conversation on every phone (issue 28 item 4), and the bridge's namespace kept the bridge's
/// (issue 27 item 7): prompts the bridge relays are recorded in the session's replay as `user_message_chunk`
/// updates marked `_meta.oa.origin = "bridge"`, and nothing the agent sends may use `_oa/*` or that mark.
extension BridgeHub {
    /// A content block of a prompt larger than this (as JSON) is kept in the replay abridged: an image's or audio's
    /// `data` and a resource's `blob` left out, text cut to its first 64 Ki characters; `_meta.oa.abridged` says so.
    ///
    /// The agent and the clients attached now get it whole; only what is kept is smaller, so one photo does not push
    /// the session's history out of the replay buffer.
    static let maxRecordedBlockBytes = 256 << 10

    /// Records a prompt a client sent (`session/prompt` params, official spelling) in the session's replay: one
    /// `session/update` with a `user_message_chunk` per content block, in order, each with the session's next
    /// `_meta.seq` and `_meta.oa = {"origin": "bridge", "promptId": <the prompt request's id>}`, sent to every client
    /// attached (the sender too: its sequence stays unbroken, and it knows its prompt by `promptId`).
    ///
    /// A phone that attaches later gets them with the rest of the replay: the questions with the answers.
    func recordPrompt(_ params: JSONValue?, promptID: JSONRPCID, session: String) {
        guard sessions.contains(session), case .array(let blocks)? = params?["prompt"] else { return }
        for block in blocks {
            let oa: [String: JSONValue] = ["origin": "bridge", "promptId": promptID.jsonValue]
            var update = JSONValue.null
            let appended = sessions.append(to: session) { seq in
                update = BridgeHub.promptRecord(block, seq: seq, oa: oa, session: session)
                guard ReplayBuffer.byteSize(of: block) > BridgeHub.maxRecordedBlockBytes else { return BufferedUpdate(seq: seq, params: update) }
                var abridged = oa
                abridged["abridged"] = true
                return BufferedUpdate(seq: seq, params: BridgeHub.promptRecord(BridgeHub.abridged(block), seq: seq, oa: abridged, session: session))
            }
            guard let appended else { return }
            persistAppended(appended, session: session)
            notify(appended.members, method: ACPMethod.sessionUpdate, params: update)
        }
    }

    /// The `session/update` params recording one content block of a prompt (official spelling).
    static func promptRecord(_ block: JSONValue, seq: Int64, oa: [String: JSONValue], session: String) -> JSONValue {
        [
            "sessionId": .string(session),
            "update": ["sessionUpdate": "user_message_chunk", "content": block],
            "_meta": ["seq": .int(seq), "oa": .object(oa)],
        ]
    }

    /// A content block without its bulk: `data` and a resource's `blob` dropped, text cut to 64 Ki characters.
    static func abridged(_ block: JSONValue) -> JSONValue {
        guard var members = block.objectValue else { return ["type": "text", "text": ""] }
        members["data"] = nil
        if case .string(let text)? = members["text"] { members["text"] = .string(String(text.prefix(64 << 10))) }
        if var resource = members["resource"]?.objectValue {
            resource["blob"] = nil
            if case .string(let text)? = resource["text"] { resource["text"] = .string(String(text.prefix(64 << 10))) }
            members["resource"] = .object(resource)
        }
        return .object(members)
    }

    /// Keeps the agent's own `_meta` of an answer about the session (`session/new`, `fork`, `load`, `resume`), for
    /// the clients that attach later: the bridge merges its keys into it rather than replacing it.
    func keepAgentMeta(of session: String, from result: JSONValue) {
        guard sessions.contains(session), let meta = result["_meta"]?.objectValue else { return }
        sessions.update(session) { $0.agentMeta = meta }
        persistSession(session)
    }

    /// The agent's answer to a `session/load` or `session/resume` it served, with the bridge's keys (`lastSeq`,
    /// `promptRunning`) merged into the agent's own `_meta` (the bridge's win a clash; the agent's others are kept).
    func withBridgeMeta(_ result: JSONValue, session: String) -> JSONValue {
        guard let lastSeq = sessions.lastSeq(of: session) else { return result }
        var members: [String: JSONValue]
        switch result {
        case .object(let object): members = object
        case .null: members = [:]
        default: return result
        }
        var meta = members["_meta"]?.objectValue ?? [:]
        meta["lastSeq"] = .int(lastSeq)
        meta["promptRunning"] = .bool(routes.promptRunning(session))
        members["_meta"] = .object(meta)
        return .object(members)
    }

    /// Whether a method is in the bridge's own namespace (`_oa/`, any case), which only the bridge may send to
    /// clients: an agent's notification in it is dropped, its request answered with an error.
    static func isBridgeNamespace(_ method: String) -> Bool {
        method.utf8.first == UInt8(ascii: "_") && method.utf8.count >= 4 && method.prefix(4).lowercased() == "_oa/"
    }
}
