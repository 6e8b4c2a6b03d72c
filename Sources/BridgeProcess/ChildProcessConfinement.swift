/// A Landlock ruleset a child restricts itself to before exec (BridgeSandbox's `LandlockRuleset` is one).
///
/// The value is kept alive by the request until the spawn returns, so its descriptor stays open meanwhile.
public protocol ChildProcessConfinement: Sendable {
    /// The ruleset's descriptor (landlock_restrict_self(2) takes it in the child).
    var rulesetDescriptor: Int32 { get }
}
