import BridgePairingWire
public import BridgeTLS
public import BridgeTime
public import Foundation
public import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bridges this client has connected to, kept in `<directory>/bridges.json` (mode 0600): each bridge's identity
/// (its certificate pin, else its name), the names and addresses it was reached by, its Tailscale names, and the file
/// of its credentials (``TokenVault``).
///
/// `oa-bridge connect` finds a bridge here whatever the user typed: nothing (the last one used), a name, an address, or
/// an address the bridge has never been reached by (then by the pin it presents).
///
/// ```swift
/// let saved = SavedBridges(directory: stateDirectory.appendingPathComponent("client"))
/// let bridge = saved.find(target: "192.168.1.20:9099") ?? (await saved.identify(address: "192.168.1.20:9099"))
/// let vault = TokenVault(file: saved.credentialsFile(for: bridge))
/// ```
public struct SavedBridges: Sendable {
    /// One bridge.
    public struct Bridge: Sendable, Codable, Equatable {
        /// Its identity: `sha256/…` (the certificate pin) when known, else the name it was first reached by.
        public var id: String
        /// The name the user knows it by (its service name).
        public var name: String
        /// The certificate pin (`sha256/…`), if it serves TLS.
        public var pin: String?
        /// WebSocket URLs it answered on, newest first (at most ``SavedBridges/maximumAddresses``).
        public var addresses: [String]
        /// Tailscale names or addresses to try when the LAN fails.
        public var tailscale: [String]
        /// The credentials file's name, inside the directory.
        public var credentials: String
        /// When it was last connected to or paired with.
        public var lastUsed: Date

        /// A bridge entry.
        public init(id: String, name: String, pin: String?, addresses: [String], tailscale: [String], credentials: String, lastUsed: Date) {
            self.id = id
            self.name = name
            self.pin = pin
            self.addresses = addresses
            self.tailscale = tailscale
            self.credentials = credentials
            self.lastUsed = lastUsed
        }
    }

    private struct File: Codable {
        var bridges: [Bridge]
    }

    /// The most addresses kept per bridge.
    public static let maximumAddresses = 8

    /// The directory (`<state>/client`).
    public let directory: URL
    /// The clock whose wall time a connection is recorded at (``Bridge/lastUsed``).
    public let clock: any BridgeClock

    /// The store in `directory`, recording times on `clock`.
    public init(directory: URL, clock: any BridgeClock = ContinuousClock()) {
        self.directory = directory
        self.clock = clock
    }

    private var indexFile: URL { directory.appendingPathComponent("bridges.json") }

    /// Every saved bridge, the most recently used first.
    ///
    /// A missing file is none; an unreadable one is reported by ``load()``.
    public var all: [Bridge] { (try? load()) ?? [] }

    /// The saved bridges as stored, the most recently used first.
    /// - Throws: when the file exists but is not a list of bridges (it is left as it is).
    public func load() throws -> [Bridge] {
        guard let data = try? Data(contentsOf: indexFile) else { return [] }
        return try PairingJSON.decoder.decode(File.self, from: data).bridges
    }

    /// The bridge used last.
    public var last: Bridge? { all.first }

    /// The bridge `target` names: nothing is the last one; an address matches one it answered on (host and port);
    /// anything else its name (any case) or identity.
    public func find(target: String?) -> Bridge? {
        guard let target, !target.isEmpty else { return last }
        if BridgeCandidates.looksLikeAddress(target), let wanted = try? BridgeEndpoint.manual(target) {
            return all.first { bridge in
                bridge.addresses.contains { address in
                    guard let known = try? BridgeEndpoint.manual(address) else { return false }
                    return known.host.lowercased() == wanted.host.lowercased() && known.port == wanted.port
                }
            }
        }
        return all.first { $0.name.caseInsensitiveCompare(target) == .orderedSame || $0.id == target }
    }

    /// The bridge with this certificate pin.
    public func find(pin: CertificatePin) -> Bridge? {
        all.first { $0.pin.flatMap { try? CertificatePin(parsing: $0) } == pin }
    }

    /// Asks `address` for its certificate (a TLS handshake and `GET /api/health`, no token) and returns the saved
    /// bridge with that pin: a bridge reached by an address it was never reached by before is still recognised.
    public func identify(address: String, timeout: Duration = .seconds(3), logger: Logger) async -> Bridge? {
        guard let endpoint = try? BridgeEndpoint.manual(address) else { return nil }
        let connector = WebSocketConnector(timeout: timeout, logger: logger)
        guard let answer = try? await connector.request("GET", url: endpoint.overTLS.httpBase + "/api/health"),
              let pin = answer.certificatePin
        else { return nil }
        return find(pin: pin)
    }

    /// Where `bridge`'s credentials are kept.
    public func credentialsFile(for bridge: Bridge) -> URL {
        directory.appendingPathComponent(bridge.credentials)
    }

    /// The credentials file name for a new bridge with identity `id`.
    public static func credentialsName(id: String) -> String {
        "bridge-" + String(id.map { $0.isLetter || $0.isNumber || "._-".contains($0) ? $0 : "_" }) + ".json"
    }

    /// Records a connection: the entry with the same identity (or, for an entry saved without a pin, the same name) is
    /// updated (name, pin, the address first, Tailscale names added, `lastUsed`: `now`, or the clock's time), or a new
    /// one is added.
    /// - Throws: when `bridges.json` exists and cannot be read (it is left as it is), or cannot be written.
    @discardableResult
    public func remember(
        name: String, pin: CertificatePin?, address: String?, tailscale: [String], credentials: String? = nil, now: Date? = nil
    ) throws -> Bridge {
        let now = now ?? clock.wallTime
        // A file that cannot be read is left for the user to look at, never overwritten.
        var bridges = try load()
        let id = pin?.description ?? name
        let index = bridges.firstIndex { $0.id == id }
            ?? bridges.firstIndex { $0.pin == nil && $0.name.caseInsensitiveCompare(name) == .orderedSame }
        var bridge = index.map { bridges[$0] }
            ?? Bridge(id: id, name: name, pin: nil, addresses: [], tailscale: [],
                      credentials: credentials ?? SavedBridges.credentialsName(id: id), lastUsed: now)
        bridge.id = id
        bridge.name = name
        if let pin { bridge.pin = pin.description }
        if let credentials { bridge.credentials = credentials }
        if let address {
            bridge.addresses = Array(([address] + bridge.addresses.filter { $0 != address }).prefix(SavedBridges.maximumAddresses))
        }
        for name in tailscale where !bridge.tailscale.contains(name) { bridge.tailscale.append(name) }
        bridge.lastUsed = now
        // The file keeps the most recently used first.
        if let index { bridges.remove(at: index) }
        bridges.insert(bridge, at: 0)
        try save(bridges)
        return bridge
    }

    private func save(_ bridges: [Bridge]) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let data = try PairingJSON.encoder.encode(File(bridges: bridges))
        let temporary = directory.appendingPathComponent(".bridges.json.\(UUID().uuidString)")
        FileManager.default.createFile(atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600])
        // rename(2) replaces the old index at once: a reader sees the old list or the new one, never half of one.
        guard rename(temporary.path, indexFile.path) == 0 else {
            let code = errno
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: indexFile.path, NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)])
        }
    }
}
