import Testing

/// How much of the world a suite needs; select with `swift test --filter`/`--skip` and `tag:<name>` (see README).
extension Tag {
    /// In-process only: no sockets, no servers, no other programs.
    @Tag static var unit: Self
    /// Runs a real server (the bridge, a fake API) on 127.0.0.1 or a local socket.
    @Tag static var loopback: Self
    /// Runs another program: /bin/sh agents, python3 (the ACP SDK, zxing-cpp), chromium, openssl or an mDNS daemon.
    @Tag static var externalTool: Self
}
