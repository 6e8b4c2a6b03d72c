import Logging
import Synchronization

/// One token refresh for a whole race: the first attempt refused as expired starts it, the others wait for the same
/// answer (its task is kept here and awaited by every caller).
final class OneRefresh: Sendable {
    private let refresh: @Sendable () async throws -> BridgeCredential?
    private let task = Mutex<Task<BridgeCredential?, any Error>?>(nil)

    init(_ refresh: @escaping @Sendable () async throws -> BridgeCredential?) {
        self.refresh = refresh
    }

    /// A refresh for `refresh`, or none.
    static func of(_ refresh: (@Sendable () async throws -> BridgeCredential?)?) -> OneRefresh? {
        guard let refresh else { return nil }
        return OneRefresh(refresh)
    }

    /// The refreshed credential (refreshed once, on the first call).
    func credential() async throws -> BridgeCredential? {
        let refresh = self.refresh
        let running = task.withLock { task in
            if let task { return task }
            let started = Task { try await refresh() }
            task = started
            return started
        }
        return try await running.value
    }

    /// `connect` with `credential`; when the bridge refuses it as expired (``BridgeClientError/tokenExpired(_:)``: the
    /// clocks apart), once more with the credential `refreshed` gives.
    ///
    /// ``BridgeClientError/unauthorized(_:)`` when there is no refresh, the refresh is refused, or the new token is
    /// refused as expired too.
    static func connecting<Link>(
        _ refreshed: OneRefresh?, credential: BridgeCredential?, address: String, logger: Logger,
        _ connect: (BridgeCredential?) async throws -> Link
    ) async throws -> Link {
        let why: String
        do {
            return try await connect(credential)
        } catch BridgeClientError.tokenExpired(let expired) {
            why = expired
        }
        guard let refreshed else { throw BridgeClientError.unauthorized(why) }
        let fresh: BridgeCredential?
        do {
            fresh = try await refreshed.credential()
        } catch {
            throw BridgeClientError.unauthorized("\(why); refreshing the tokens was refused: \(error)")
        }
        logger.notice("the bridge refused the access token as expired; tokens refreshed, trying once more", metadata: ["address": "\(address)"])
        do {
            return try await connect(fresh)
        } catch BridgeClientError.tokenExpired(let again) {
            throw BridgeClientError.unauthorized("\(again), even after refreshing the tokens")
        }
    }
}
