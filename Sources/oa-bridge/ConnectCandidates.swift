import BridgeClient
import BridgeDiscovery
import Foundation

/// Gathers the endpoints `connect` races: mDNS first, then the manual address, then Tailscale.
struct ConnectCandidates: Sendable {
    let target: String?
    let tailscale: [String]
    let browseTime: Duration

    /// Whether the target reads as an address rather than a service name or id.
    var manualEndpoint: BridgeEndpoint? {
        guard let target, ConnectCandidates.looksLikeAddress(target) else { return nil }
        return try? BridgeEndpoint.manual(target)
    }

    static func looksLikeAddress(_ text: String) -> Bool {
        if UUID(uuidString: text) != nil { return false }
        return text.contains(":") || text.contains(".") || text.hasPrefix("[") || text.lowercased().hasPrefix("ws://")
    }

    func collect(backend: any DiscoveryBackend) async throws -> [BridgeEndpoint] {
        if let target, ConnectCandidates.looksLikeAddress(target) {
            _ = try BridgeEndpoint.manual(target)  // a clear error for a malformed address
        }
        let manual: [BridgeEndpoint] = manualEndpoint.map { [$0] } ?? []
        let fallbacks = manual + (try tailscale.map { try BridgeEndpoint.manual($0, source: .tailscale) })
        // An address names one desktop; an arbitrary mDNS service might be another one.
        if !manual.isEmpty { return fallbacks }
        // With a Tailscale name at hand, do not let a blocked LAN hold things up.
        let limit = fallbacks.isEmpty ? browseTime : min(browseTime, .seconds(1))
        let discovered = await browse(backend: backend, limit: limit, stopAtFirstMatch: true)
        return discovered + fallbacks
    }

    private func browse(backend: any DiscoveryBackend, limit: Duration, stopAtFirstMatch: Bool) async -> [BridgeEndpoint] {
        let events = backend.browse(.openAgents, domain: nil)
        let wanted = target.flatMap { ConnectCandidates.looksLikeAddress($0) ? nil : $0 }
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
