/// The TXT record of `_openagents._tcp`: what a phone needs before it connects.
///
/// Never a secret.
///
/// | key | meaning |
/// |---|---|
/// | `txtvers` | version of this TXT layout (`1`) |
/// | `proto` | protocol versions served, comma-separated: `0.2` (seed dialect 0.2.x), `1` (ACP v1) |
/// | `id` | stable install id (UUID) of the desktop |
/// | `auth` | `token` (pairing required) or `none` |
/// | `path` | the WebSocket path, for example `/` |
/// | `ver` | the bridge's version |
/// | `acp` | the endpoint of ACP's remote-transport RFD (WebSocket and Streamable HTTP), `/acp` (added by the server) |
/// | `tls` | `1` when the port also speaks TLS (`wss://`, `https://`); a client still trusts only the pin from the QR code |
public enum BridgeTXT {
    /// The TXT layout version.
    public static let version = "1"
    /// Protocol versions served.
    public static let protocols = ["0.2", "1"]

    /// Builds the record.
    public static func record(
        installID: String, auth: String, path: String, bridgeVersion: String = "0.1.0", tls: Bool = false,
        extra: [(String, String)] = []
    ) throws(DiscoveryError) -> TXTRecord {
        var txt = TXTRecord()
        try txt.set("txtvers", version)
        try txt.set("proto", protocols.joined(separator: ","))
        try txt.set("id", installID)
        try txt.set("auth", auth)
        try txt.set("path", path)
        try txt.set("ver", bridgeVersion)
        if tls { try txt.set("tls", "1") }
        for (key, value) in extra { try txt.set(key, value) }
        return txt
    }
}
