public import BridgeProcess

/// A ruleset confines a ``ChildProcess``: the child restricts itself to it before exec (``ChildProcess/Request/confinement``).
extension LandlockRuleset: ChildProcessConfinement {
    /// ``descriptor``.
    public var rulesetDescriptor: Int32 { descriptor }
}
