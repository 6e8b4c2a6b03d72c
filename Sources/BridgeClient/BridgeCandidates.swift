public import BridgeDiscovery
import Foundation

/// The endpoints a client races for one bridge: services found over mDNS first, then manual addresses, then
/// Tailscale names.
///
/// `oa-bridge connect` and an app embedding ``BridgeClientSession`` gather them the same way: a target that looks
/// like an address is tried as given (no browsing: an arbitrary mDNS service might be another desktop); a service
/// name or install id (TXT `id`) is looked up over mDNS, with the pairing payload's address and fallbacks behind it.
public struct BridgeCandidates: Sendable {
    /// A service name or install id to look for over mDNS; `nil` (while ``browse`` is true) takes the first bridge.
    public var nameOrID: String?
    /// Whether to browse at all.
    public var browse: Bool
    /// Addresses given by the user or the pairing payload.
    public var manual: [BridgeEndpoint]
    /// Tailscale names or IPs, tried last.
    public var tailscale: [BridgeEndpoint]
    /// How long to browse.
    public var browseTime: Duration

    /// The candidates for `target` (a service name, an install id, an address, or `nil` for the first bridge
    /// found), a pairing payload's service name, WebSocket URL and fallbacks, and extra Tailscale names.
    /// - Throws: ``BridgeClientError`` when an address cannot be read.
    public init(target: String?, pairing: (name: String, ws: String, fallbacks: [String])?, tailscale: [String], browseTime: Duration) throws {
        self.browseTime = browseTime
        self.tailscale = try (tailscale + (pairing?.fallbacks ?? [])).map { try BridgeEndpoint.manual($0, source: .tailscale) }
        if let target, BridgeCandidates.looksLikeAddress(target) {
            manual = [try BridgeEndpoint.manual(target)]
            nameOrID = nil
            browse = false
        } else {
            manual = try pairing.map { [try BridgeEndpoint.manual($0.ws)] } ?? []
            nameOrID = target ?? pairing?.name
            browse = true
        }
    }

    /// Whether `text` is an address (`host:port`, a dotted name or IP, `[IPv6]`, a `ws://` URL) rather than a
    /// service name or install id.
    public static func looksLikeAddress(_ text: String) -> Bool {
        if UUID(uuidString: text) != nil { return false }
        return text.contains(":") || text.contains(".") || text.hasPrefix("[") || text.lowercased().hasPrefix("ws://")
    }

    /// The endpoints to race, best first: what `backend` resolves within ``browseTime`` (1 s when there is another
    /// way in), then the manual and Tailscale endpoints not already found.
    public func collect(backend: any DiscoveryBackend) async -> [BridgeEndpoint] {
        let fallbacks = manual + tailscale
        guard browse else { return fallbacks }
        // With another way in at hand, do not let a blocked LAN hold things up.
        let limit = fallbacks.isEmpty ? browseTime : min(browseTime, .seconds(1))
        var discovered = await self.browse(backend: backend, limit: limit)
        // The same address may come from mDNS and the payload: keep the first (mDNS) one.
        for endpoint in fallbacks where !discovered.contains(where: { $0.url == endpoint.url }) {
            discovered.append(endpoint)
        }
        return discovered
    }

    private func browse(backend: any DiscoveryBackend, limit: Duration) async -> [BridgeEndpoint] {
        let events = backend.browse(.openAgents, domain: nil)
        let wanted = nameOrID
        return await withTaskGroup(of: [BridgeEndpoint]?.self) { group in
            group.addTask {
                for await event in events {
                    switch event {
                    case .added(let service), .updated(let service):
                        if let wanted, service.instance.name != wanted, service.txt["id"] != wanted.lowercased() { continue }
                        return BridgeEndpoint.candidates(for: service)
                    case .daemonUnavailable:
                        return []
                    default:
                        continue
                    }
                }
                return []
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? []
        }
    }
}
