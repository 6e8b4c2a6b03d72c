extension Duration {
    /// The duration as a number of seconds (fractional), for timings people read.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration as a number of milliseconds (fractional).
    public var inMilliseconds: Double { inSeconds * 1_000 }
}
