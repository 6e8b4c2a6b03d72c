extension Duration {
    /// "10 s", "0.3 s": short, for messages people read.
    package var words: String {
        let milliseconds = components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000
        if milliseconds % 1_000 == 0 { return "\(milliseconds / 1_000) s" }
        return "\(Double(milliseconds) / 1_000) s"
    }
}
