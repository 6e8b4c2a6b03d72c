/// Why the MagicDNS name's certificate is not served (the bridge keeps serving its own identity to everyone).
public enum TailscaleCertificateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// tailscaled did not hand the certificate out (not running, HTTPS certificates off, not permitted).
    case localAPI(name: String, TailscaleError)
    /// The LocalAPI's answer is not a private key and a certificate chain.
    case notAPair(String)
    /// The private key is not the certificate's.
    case keyDoesNotMatch

    /// A message a user can act on.
    public var description: String {
        switch self {
        case .localAPI(let name, let error):
            "no Tailscale HTTPS certificate for \(name) (\(error)); to have one, enable HTTPS certificates in the "
                + "tailnet's admin console (DNS page) and let this user fetch certificates (run serve as root, "
                + "`sudo tailscale set --operator=$USER`, or TS_PERMIT_CERT_UID for tailscaled). Phones still connect "
                + "with the bridge's pinned identity"
        case .notAPair(let reason):
            "tailscaled's certificate answer is not a key and a certificate chain (\(reason)); try `tailscale cert` to see what it gives"
        case .keyDoesNotMatch:
            "tailscaled's certificate and key do not belong together; try `tailscale cert` to have it fetch a new one"
        }
    }
}
