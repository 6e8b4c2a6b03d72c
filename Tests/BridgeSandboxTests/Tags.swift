import Testing

extension Tag {
    /// Runs in the process, with the kernel's own calls (files in a temporary directory, Landlock, fork).
    @Tag static var kernel: Self
}
