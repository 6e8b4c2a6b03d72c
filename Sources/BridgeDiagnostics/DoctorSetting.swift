/// The setting of `oa-bridge serve`, or the client's step, a doctor check's fix is about.
///
/// The library says what to change or do in words; the command line names the flag (issue 31 item 5), in the text
/// and in the JSON's `fix`.
public enum DoctorSetting: String, Sendable, Hashable, Codable {
    /// The addresses serve listens on.
    case host
    /// The port serve listens on (and doctor checks).
    case port
    /// Whether and where serve announces itself over mDNS.
    case discovery
    /// Whether terminals run confined, unconfined or not at all.
    case terminalConfinement
    /// Pairing this device (a client): with the code the desktop shows.
    case pairing
    /// Trying every address a bridge announces (a client).
    case probe
    /// Whether serve requires tokens bound to a key (DPoP), lets unbound ones keep working, or ignores DPoP.
    case dpop
    /// Doctor's own role (desk or client), when it decided it from what is on this machine: a check's detail names it.
    case role
}
