import Testing

/// How much of the world a suite needs (see README's test tags).
extension Tag {
    /// In-process only: no sockets, no servers, no other programs.
    @Tag static var unit: Self
    /// Uses 127.0.0.1 only.
    @Tag static var loopback: Self
}
