/// Bounds for what a test waits on but does not test.
///
/// The product's client defaults (a 3 s connect, a 5 s `initialize`, a 5 s local pairing fetch) are right for a phone
/// and wrong for a test: the full parallel run on a loaded 2-core CI machine can hold one test's task back for longer
/// than that while the bridge it talks to is fine. Such a test then fails on a timeout it is not about. A test that
/// is about a timeout sets its own (on an injected clock where it can). A bound here only decides how long a broken
/// test takes to fail: every wait it bounds ends at once when things work.
public enum TestBounds {
    /// How long a test waits for an answer it does not time: a handshake, an `initialize`, an HTTP reply.
    public static let notUnderTest: Duration = .seconds(30)

    /// ``notUnderTest`` in whole seconds, for a socket's receive timeout (`SO_RCVTIMEO`).
    public static var notUnderTestSeconds: Int { Int(notUnderTest.components.seconds) }
}
