public import BridgeTime
public import Foundation
public import Logging
package import NIOSSL
import Synchronization

/// The MagicDNS name's real certificate, served beside the bridge's self-signed identity and chosen by SNI
/// (issue 11 item 6): a TLS client that asks for the tailnet name (a browser or phone on the tailnet opening
/// `https://desk.tail1234.ts.net:9099`) gets tailscaled's Let's Encrypt certificate and verifies it without a pin;
/// every other client (no SNI, an address, another name) gets the self-signed identity and its pin, unchanged.
///
/// ``run(logger:)`` fetches the certificate from tailscaled's LocalAPI when the server starts and again before it
/// expires (see ``TailscaleCertificateSchedule``); until a fetch succeeds nothing changes for anyone. Set
/// BridgeServer's `BridgeServerConfiguration.tailscaleCertificates` and the server runs it.
public final class TailscaleCertificates: Sendable {
    /// The MagicDNS name, lower case, without a trailing dot.
    public let name: String
    private let fetch: @Sendable (String) async throws(TailscaleError) -> Data
    private let clock: any BridgeClock
    private let current = Mutex<TailscaleCertificate?>(nil)

    /// Certificates for `name` from tailscaled's LocalAPI through `fetcher`, renewed on `clock`.
    public convenience init(
        name: String, fetcher: TailscaleCertificateFetcher = TailscaleCertificateFetcher(), clock: any BridgeClock = ContinuousClock()
    ) {
        self.init(name: name, clock: clock) { name throws(TailscaleError) in
            try await fetcher.pair(for: name)
        }
    }

    /// Certificates for `name` from `fetch` (tailscaled's `?type=pair` answer); the renewal sleeps on `clock` and
    /// judges validity by its `BridgeClock/wallTime` (a test moves both by hand).
    public init(name: String, clock: any BridgeClock, fetch: @escaping @Sendable (String) async throws(TailscaleError) -> Data) {
        self.name = Self.normalized(name)
        self.clock = clock
        self.fetch = fetch
    }

    /// The certificate served to clients asking for ``name`` now, if any.
    public var certificate: TailscaleCertificate? { current.withLock { $0 } }

    /// What a handshake whose ClientHello named `serverName` (SNI) uses: the tailnet certificate when the name is
    /// ``name`` and a valid certificate is there, else no change (the bridge's own identity).
    package func override(forServerName serverName: String?) -> NIOSSLContextConfigurationOverride {
        guard let serverName, Self.normalized(serverName) == name,
              let certificate = current.withLock({ $0 }), certificate.isValid(at: clock.wallTime) else {
            return .noChanges
        }
        return certificate.override
    }

    /// Fetches once and keeps the answer when it is usable (and not older than what is held).
    ///
    /// Returns the certificate held afterwards. Throws ``TailscaleCertificateError``; what was held stays until
    /// it expires.
    @discardableResult
    public func refresh() async throws(TailscaleCertificateError) -> TailscaleCertificate {
        let pair: Data
        do {
            pair = try await fetch(name)
        } catch {
            throw .localAPI(name: name, error)
        }
        let fetched = try TailscaleCertificate(pairPEM: pair)
        return current.withLock { held in
            if let old = held, old.notValidAfter > fetched.notValidAfter { return old }
            held = fetched
            return fetched
        }
    }

    /// Fetches now, then again when ``TailscaleCertificateSchedule`` says, until the task is cancelled.
    ///
    /// Never throws: a failure is logged (once at notice, then at debug while it repeats) and retried; an expired
    /// certificate is dropped, so clients asking for the name get the bridge's own identity again.
    public func run(logger: Logger) async {
        var failures = 0
        var servingSerial: String?
        while !Task.isCancelled {
            let delay: Duration
            do {
                let certificate = try await refresh()
                failures = 0
                if certificate.serial != servingSerial {
                    servingSerial = certificate.serial
                    logger.notice("serving the Tailscale HTTPS certificate to clients that ask for \(name)", metadata: [
                        "name": "\(name)", "serial": "\(certificate.serial)",
                        "not_valid_after": "\(ISO8601DateFormatter().string(from: certificate.notValidAfter))",
                    ])
                }
                delay = TailscaleCertificateSchedule.delay(after: certificate, now: clock.wallTime)
            } catch {
                failures += 1
                let expired = current.withLock { held -> Bool in
                    guard let certificate = held, !certificate.isValid(at: clock.wallTime) else { return false }
                    held = nil
                    return true
                }
                if expired {
                    servingSerial = nil
                    logger.warning("the Tailscale HTTPS certificate expired and could not be renewed; clients asking for \(name) get the bridge's own identity", metadata: ["name": "\(name)"])
                }
                let level: Logger.Level = failures == 1 ? .notice : .debug
                logger.log(level: level, "\(error)", metadata: ["name": "\(name)", "failures": "\(failures)"])
                delay = TailscaleCertificateSchedule.retryDelay(failures: failures)
            }
            do {
                try await clock.sleep(for: delay)
            } catch {
                return
            }
        }
    }

    /// Lower case, without a trailing dot (SNI and MagicDNS names are compared this way).
    static func normalized(_ name: String) -> String {
        var name = name.lowercased()
        while name.hasSuffix(".") { name.removeLast() }
        return name
    }
}

/// When ``TailscaleCertificates`` asks tailscaled again.
///
/// A certificate is renewed when a third of its lifetime is left (30 days of Let's Encrypt's 90, as tailscaled
/// itself does); until then the bridge asks once a day anyway (tailscaled may have renewed early, or HTTPS
/// certificates may have been turned on). Past that point tailscaled may still hand out the old certificate while
/// it renews in the background: the bridge asks again every hour until it gets a newer one.
public enum TailscaleCertificateSchedule {
    /// The longest wait between two questions to tailscaled.
    public static let longestWait: Duration = .seconds(24 * 3600)
    /// The wait once renewal is due and tailscaled gave the old certificate again.
    public static let renewalRetry: Duration = .seconds(3600)
    /// The first wait after a failure; it doubles up to ``renewalRetry``.
    public static let firstRetry: Duration = .seconds(60)

    /// When a certificate should be renewed: a third of its lifetime before it expires.
    public static func renewalDate(of certificate: TailscaleCertificate) -> Date {
        let lifetime = certificate.notValidAfter.timeIntervalSince(certificate.notValidBefore)
        return certificate.notValidAfter.addingTimeInterval(-max(lifetime, 0) / 3)
    }

    /// How long to wait after fetching `certificate` at `now`.
    public static func delay(after certificate: TailscaleCertificate, now: Date) -> Duration {
        let untilRenewal = renewalDate(of: certificate).timeIntervalSince(now)
        if untilRenewal > 0 {
            return min(.seconds(untilRenewal), longestWait)
        }
        return renewalRetry
    }

    /// How long to wait after `failures` failures in a row (1, 2, …).
    public static func retryDelay(failures: Int) -> Duration {
        let doublings = min(max(failures - 1, 0), 6)
        return min(firstRetry * (1 << doublings), renewalRetry)
    }
}
