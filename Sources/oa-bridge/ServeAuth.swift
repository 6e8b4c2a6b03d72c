import BridgeConfig
import BridgePairing
import Foundation
import Logging

/// The token store and authenticator for `--auth token`; both `nil` for `--auth none`.
struct ServeAuth: Sendable {
    let store: TokenStore?
    let authenticator: Authenticator?

    static func make(settings: ServeSettings, stateDirectory: URL, logger: Logger) throws -> ServeAuth {
        guard settings.auth.value == .token else { return ServeAuth(store: nil, authenticator: nil) }
        let store = try TokenStore(
            directory: stateDirectory,
            configuration: TokenStoreConfiguration(requireApproval: settings.requireApproval.value),
            logger: logger)
        return ServeAuth(store: store, authenticator: Authenticator(store: store))
    }
}
