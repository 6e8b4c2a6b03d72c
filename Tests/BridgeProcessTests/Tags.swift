import Testing

/// How much of the world a suite needs; select with `swift test --filter`/`--skip` and `tag:<name>` (see README).
extension Tag {
    /// Runs another program: /bin/sh and the like.
    @Tag static var externalTool: Self
}
