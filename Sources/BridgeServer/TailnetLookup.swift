import BridgeDiscovery
import Logging

/// This machine's tailnet name and addresses, for the Tailscale fallback the bridge offers phones (in the QR code
/// and in TXT). Never fatal: without Tailscale there is simply no fallback.
public enum TailnetLookup {
    /// The tailnet identity when Tailscale runs, else `nil`. With `announce`, says at start what phones get.
    public static func current(
        reader: TailscaleStatusReader = TailscaleStatusReader(), logger: Logger, announce: Bool = true
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
}
