public import BridgeTime
public import Foundation
public import Logging

/// This machine's tailnet name and addresses, for the Tailscale fallback the bridge offers phones (in the QR code
/// and in TXT).
///
/// Never fatal: without Tailscale there is simply no fallback.
public enum TailnetLookup {
    /// The environment variable naming tailscaled's LocalAPI socket when it is not in a standard place (tailscaled
    /// started with `--socket`); tests point it at a stand-in.
    ///
    /// Tried before the standard paths.
    public static let socketEnvironmentKey = "OA_BRIDGE_TAILSCALED_SOCKET"

    /// The LocalAPI socket paths to try: `OA_BRIDGE_TAILSCALED_SOCKET` first when set, then the standard ones.
    public static func socketPaths(environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        let extra = environment[socketEnvironmentKey].map { [$0] } ?? []
        return extra + TailscaleStatusReader.defaultSocketPaths
    }

    /// The tailnet identity when Tailscale runs, else `nil`.
    ///
    /// With `announce`, says at start what phones get.
    public static func current(
        reader: TailscaleStatusReader = TailscaleStatusReader(socketPaths: TailnetLookup.socketPaths()),
        logger: Logger, announce: Bool = true
    ) async -> TailnetIdentity? {
        do {
            let identity = try await reader.read()
            guard identity.isRunning, !identity.dnsName.isEmpty else {
                if announce { logger.info("Tailscale is installed but not running; no tailnet fallback", metadata: ["state": "\(identity.backendState)"]) }
                return nil
            }
            if announce { logger.notice("Tailscale fallback: phones can also reach this desktop as \(identity.dnsName)") }
            return identity
        } catch .notInstalled {
            return nil
        } catch {
            if announce { logger.info("no tailnet fallback: \(error)") }
            return nil
        }
    }

    /// The MagicDNS name's HTTPS certificate for `identity`, fetched from the same LocalAPI sockets, for
    /// BridgeServer's `BridgeServerConfiguration.tailscaleCertificates`, renewed on `clock`; `nil` without a tailnet name.
    public static func certificates(for identity: TailnetIdentity?, clock: any BridgeClock = ContinuousClock()) -> TailscaleCertificates? {
        guard let identity, !identity.dnsName.isEmpty else { return nil }
        return TailscaleCertificates(name: identity.dnsName, fetcher: TailscaleCertificateFetcher(socketPaths: socketPaths()), clock: clock)
    }
}
