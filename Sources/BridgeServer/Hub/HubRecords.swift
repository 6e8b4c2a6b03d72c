import BridgeACP
import BridgeRPC
import BridgeWorkspace
import Logging
import NIOCore

/// Identifies one WebSocket connection inside the hub.
typealias ConnectionID = UInt64

/// One connected client.
struct ClientRecord {
    /// Where frames for this client go (its writer task reads them).
    let outbound: OutboundQueue
    /// Its dialect, once `initialize` succeeded.
    var dialect: ACPDialect?
    /// The `clientCapabilities` of its `initialize` (official spelling), for example whether it answers elicitations.
    var capabilities: JSONValue? = nil
    /// How many `initialize` requests are being answered (the agent may still be starting).
    var initializing = 0
    /// Requests forwarded to the agent and not answered yet.
    var pending = 0
    /// Sessions it is attached to.
    var sessions: Set<String> = []
    /// Its logger (with `connection` metadata).
    let logger: Logger
    /// The paired device it authenticated as (auth on), for closing it when the device is revoked.
    var device: String? = nil
}

/// A session the agent has, and who is attached to it.
struct SessionRecord {
    /// The session's working directory (real path, inside the bridge's working directory).
    var files: WorkspaceFiles
    /// Its `additionalDirectories` (real paths, inside the bridge's working directory): `fs/*` paths under one of
    /// them are served there.
    var additional: [WorkspaceFiles] = []
    /// Connections that get its updates.
    var members: Set<ConnectionID> = []
    /// The session's modes (`availableModes`, `currentModeId`), kept current from the answers of `session/new`,
    /// `session/load`, `session/resume`, `session/fork` and `session/set_mode` and from `current_mode_update`;
    /// returned to a client that attaches.
    var modes: JSONValue?
    /// The session's models (`availableModels`, `currentModelId`), kept current like ``modes`` (and `session/set_model`).
    var models: JSONValue? = nil
    /// The session's config options, kept current from the answers and `config_option_update`.
    var configOptions: JSONValue? = nil
    /// The agent's own `_meta` of its last answer for the session (`session/new`, `fork`, `load`, `resume`): a client
    /// that attaches later gets it, with the bridge's keys merged in.
    var agentMeta: [String: JSONValue] = [:]
    /// The sequence number the next `session/update` gets (`_meta.seq`).
    var nextSeq: Int64 = 1
    /// The highest `seq` the store has been asked to reserve (``SessionTable/append(to:_:)``); 0 before the first.
    var seqReserved: Int64 = 0
    /// The `seq`s a bridge that did not stop cleanly may have sent before it stored them (lost with it): a phone that
    /// resumes from before their end is told (`lostUpdates` in the answer to `_oa/session/resume`), never left to
    /// skip what it has not seen (issue 25, finding F7).
    var unstored: ClosedRange<Int64>? = nil
    /// The latest updates, oldest first, for `_oa/session/resume` (official spelling, `_meta.seq` set).
    var replay = ReplayBuffer()
    /// The stop reason of the last prompt that ended while the client that sent it was gone.
    var finishedWhileAway: String?
    /// Since when nobody is attached and no prompt runs (on the configuration's clock); `nil` while it is in use or
    /// not looked at since.
    ///
    /// The longest idle are dropped first (see ``SessionRetention``).
    var idleSince: ContinuousClock.Instant? = nil
    /// Whether the running agent has it, or it waits to be restored, or it was restored read-only.
    var state: SessionState = .live
    /// Its title (the agent's `session_info_update`), kept with it across restarts.
    var title: String? = nil
    /// The paired device whose connection created it (auth on).
    var device: String? = nil
    /// When it was created (seconds since 1970), as stored.
    var createdAt: Double = 0
    /// Its prompts by idempotency key (``IdempotencyLedger``).
    var prompts = IdempotencyLedger()

    /// The modes, models and config options a client attaching to the session gets (official spelling).
    var presentState: [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        if let modes { result["modes"] = modes }
        if let models { result["models"] = models }
        if let configOptions { result["configOptions"] = configOptions }
        return result
    }
}

/// One `session/update` kept for resume: its params, or the very frame official clients got (``SplicedUpdate``).
struct BufferedUpdate: Sendable {
    let seq: Int64
    private let kept: Kept
    /// The size of its params (see ``ReplayBuffer``), known when it is kept rather than measured again.
    let byteCount: Int

    private enum Kept {
        case params(JSONValue)
        case frame(ByteBuffer)
    }

    /// An update kept as its params (official spelling, with `_meta.seq`).
    init(seq: Int64, params: JSONValue) {
        self.seq = seq
        kept = .params(params)
        byteCount = ReplayBuffer.byteSize(of: params)
    }

    /// An update kept as the frame official clients got (shared with them, not copied), its params `paramsBytes` long.
    init(seq: Int64, frame: ByteBuffer, paramsBytes: Int) {
        self.seq = seq
        kept = .frame(frame)
        byteCount = paramsBytes
    }

    /// The frame official clients got, when it was kept: replayed to them as it is.
    var frame: ByteBuffer? {
        if case .frame(let frame) = kept { return frame }
        return nil
    }

    /// The notification's params, official spelling, with `_meta.seq` (read back from the frame if that is what is kept).
    var params: JSONValue {
        switch kept {
        case .params(let params):
            return params
        case .frame(let frame):
            guard case .single(.message(.notification(let notification))) = JSONRPCFrame(parsingUTF8: Array(frame.readableBytesView)) else {
                return .null  // not reached: the frame was made from parsed params
            }
            return notification.params ?? .null
        }
    }
}

/// A client request forwarded to the agent under a bridge-chosen id.
struct ClientRoute {
    let connection: ConnectionID
    /// The id the client used, echoed in the answer.
    let clientID: JSONRPCID
    let method: String
    /// The batch the answer belongs to, if the request came in one.
    let batch: UInt64?
    /// For session/new: the session's files; for session/load: the session being attached.
    var files: WorkspaceFiles?
    /// For session/new, load, resume and fork: the session's `additionalDirectories`.
    var additional: [WorkspaceFiles] = []
    var sessionID: String?
    /// The agent the request went to (moved when a request that never reached a dead agent goes to the next one).
    var generation: Int
    /// For `session/set_mode` / `session/set_model`: the mode or model asked for, kept as current once the agent agrees.
    var requested: JSONValue? = nil
    /// When the request came in (on the configuration's clock), for the relay-latency metric.
    var started: ContinuousClock.Instant
    /// For `session/prompt`: the client's idempotency key, whose outcome is kept (``IdempotencyLedger``).
    var idempotencyKey: String? = nil
}

