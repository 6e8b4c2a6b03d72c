import Testing

/// How much of the world a suite needs; select with `swift test --filter`/`--skip` and `tag:<name>` (see README).
extension Tag {
    /// In-process only: no sockets, no servers, no other programs.
    @Tag static var unit: Self
    /// Runs another program: here /bin/sh, started confined.
    @Tag static var externalTool: Self
}
