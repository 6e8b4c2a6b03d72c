/// What one permessage-deflate agreement (RFC 7692) settled for a connection, seen from either end.
///
/// `server*` parameters govern the messages the server compresses (and the client inflates), `client*` the other
/// direction. A window of `n` bits is an LZ77 window of `2^n` bytes; the inflating side may always use 15.
public struct PerMessageDeflateParameters: Sendable, Equatable {
    /// The largest window the server compresses with (9...15; zlib cannot make 8-bit raw deflate streams).
    public var serverMaxWindowBits: Int
    /// Whether the server starts every message with an empty window.
    public var serverNoContextTakeover: Bool
    /// The largest window the client compresses with (8...15).
    public var clientMaxWindowBits: Int
    /// Whether the client starts every message with an empty window.
    public var clientNoContextTakeover: Bool

    /// Parameters as given.
    public init(serverMaxWindowBits: Int = 15, serverNoContextTakeover: Bool = false,
                clientMaxWindowBits: Int = 15, clientNoContextTakeover: Bool = false) {
        self.serverMaxWindowBits = serverMaxWindowBits
        self.serverNoContextTakeover = serverNoContextTakeover
        self.clientMaxWindowBits = clientMaxWindowBits
        self.clientNoContextTakeover = clientNoContextTakeover
    }
}

/// How this end compresses what it sends: the zlib settings, chosen to keep a connection's compressor small (issue 32
/// goal 3: idle connections stay cheap; the compressor is released when a connection has been quiet a while).
public struct PerMessageDeflateSettings: Sendable, Equatable {
    /// The window the bridge compresses with at most (bits).
    ///
    /// 11 (2 KiB) holds the last dozen streamed updates, whose envelopes repeat: on the recorded agent answer
    /// (Tests/deflate/fast_agent_answer.jsonl) it sends 11.4x fewer bytes against 12.6x with 15 bits and memLevel 8,
    /// while zlib's compressor takes about 22 KB instead of 268 KB.
    public var maxWindowBits: Int
    /// zlib's memLevel (1...9): the hash table and the pending buffer grow as `2^(memLevel+7)` and `2^(memLevel+8)`.
    public var memoryLevel: Int
    /// zlib's compression level (1...9, or -1 for zlib's default, 6).
    public var compressionLevel: Int
    /// Messages shorter than this go uncompressed (with context takeover, even 40 bytes compress; below that the
    /// deflate block header costs more than it saves).
    public var minimumSize: Int

    /// The bridge's defaults.
    public init(maxWindowBits: Int = 11, memoryLevel: Int = 4, compressionLevel: Int = 6, minimumSize: Int = 32) {
        self.maxWindowBits = min(max(maxWindowBits, 9), 15)
        self.memoryLevel = min(max(memoryLevel, 1), 9)
        self.compressionLevel = compressionLevel == -1 ? -1 : min(max(compressionLevel, 0), 9)
        self.minimumSize = max(minimumSize, 0)
    }
}
