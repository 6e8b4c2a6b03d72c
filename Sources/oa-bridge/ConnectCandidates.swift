import BridgeClient
import BridgeDiscovery
import Foundation

/// Gathers the endpoints `connect` races: mDNS first, then manual addresses, then Tailscale.
struct ConnectCandidates: Sendable {
    /// A service name or install id to look for over mDNS; `nil` with `browseForAny` takes the first bridge.
    var nameOrID: String?
    /// Whether to browse at all.
    var browse: Bool
    /// Addresses given by the user or the pairing payload.
    var manual: [BridgeEndpoint]
    /// Tailscale names or IPs.
    var tailscale: [BridgeEndpoint]
    /// How long to browse.
    var browseTime: Duration

    /// Reads `connect`'s TARGET: an address is tried as given (no browsing: an arbitrary mDNS
    /// service might be another desktop); a name or id is looked up over mDNS.
    init(target: String?, pairing: (name: String, ws: String, fallbacks: [String])?, tailscale: [String], browseTime: Duration) throws {
        self.browseTime = browseTime
        self.tailscale = try (tailscale + (pairing?.fallbacks ?? [])).map { try BridgeEndpoint.manual($0, source: .tailscale) }
        if let target, ConnectCandidates.looksLikeAddress(target) {
            manual = [try BridgeEndpoint.manual(target)]
            nameOrID = nil
            browse = false
        } else {
            manual = try pairing.map { [try BridgeEndpoint.manual($0.ws)] } ?? []
            nameOrID = target ?? pairing?.name
            browse = true
        }
    }

    static func looksLikeAddress(_ text: String) -> Bool {
        if UUID(uuidString: text) != nil { return false }
        return text.contains(":") || text.contains(".") || text.hasPrefix("[") || text.lowercased().hasPrefix("ws://")
    }

    func collect(backend: any DiscoveryBackend) async -> [BridgeEndpoint] {
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
