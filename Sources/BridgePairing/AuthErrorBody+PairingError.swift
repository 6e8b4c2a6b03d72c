import BridgePairingWire

extension AuthErrorBody {
    /// The body describing `error`: its ``PairingError/code`` and ``PairingError/message``, and the seconds to wait
    /// when it is ``PairingError/rateLimited(retryAfterSeconds:)``.
    public init(_ error: PairingError) {
        if case .rateLimited(let seconds) = error {
            self.init(error: error.code, message: error.message, retryAfter: seconds)
        } else {
            self.init(error: error.code, message: error.message)
        }
    }
}
