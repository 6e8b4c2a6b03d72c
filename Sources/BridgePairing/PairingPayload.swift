import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What the QR code carries: where to reach the desktop and the pairing token.
///
/// `{"ws":"ws://<lan-ip>:9099/","http":"http://<lan-ip>:9099","session":"<uuid>","name":"<service name>",
/// "token":"oa_p_…","fallbacks":["<tailscale name>",…]}`; `token` is absent when auth is off (`--auth none`).
/// With TLS the URLs are `wss://…` and `https://…` and `"pin":"sha256/…"` is the bridge's certificate pin: the QR code
/// is the trusted channel it travels through.
public struct PairingPayload: Sendable, Equatable, Codable {
    /// The WebSocket URL for JSON-RPC.
    public var ws: String
    /// The HTTP base URL (for `/api/auth/exchange` and friends).
    public var http: String
    /// The server's session UUID (changes at every start).
    public var session: String
    /// The service name shown to the user.
    public var name: String
    /// The pairing token, or `nil` when auth is off.
    public var token: String?
    /// Other host names or addresses to try (e.g. the Tailscale name), in order.
    public var fallbacks: [String]
    /// The pin of the bridge's TLS certificate (`sha256/<base64>`), or `nil` when the bridge serves plaintext only.
    public var pin: String?

    /// A payload with all fields given.
    public init(ws: String, http: String, session: String, name: String, token: String?, fallbacks: [String] = [], pin: String? = nil) {
        self.ws = ws
        self.http = http
        self.session = session
        self.name = name
        self.token = token
        self.fallbacks = fallbacks
        self.pin = pin
    }

    /// A payload for `host` (an IPv4 address, a name, or an IPv6 address with or without brackets) and `port`.
    /// - Parameter webSocketPath: the path of the JSON-RPC WebSocket endpoint, starting with `/`.
    /// - Parameter pin: the TLS certificate pin; when given the URLs are `wss://` and `https://`.
    public init(
        host: String, port: Int = 9099, webSocketPath: String = "/", session: String, name: String,
        token: String?, fallbacks: [String] = [], pin: String? = nil
    ) {
        let authority = "\(LANAddress.bracketedIfIPv6(host)):\(port)"
        let path = webSocketPath.hasPrefix("/") ? webSocketPath : "/" + webSocketPath
        let secure = pin != nil
        self.init(
            ws: "\(secure ? "wss" : "ws")://\(authority)\(path)", http: "\(secure ? "https" : "http")://\(authority)",
            session: session, name: name, token: token, fallbacks: fallbacks, pin: pin)
    }

    /// Compact JSON with sorted keys and unescaped slashes: the exact text put in the QR code.
    public func jsonString() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a struct of strings cannot fail; fall back to an empty object rather than trapping.
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Parses a payload read from a QR code.
    public static func decode(_ text: String) throws -> PairingPayload {
        try JSONDecoder().decode(PairingPayload.self, from: Data(text.utf8))
    }

    /// The QR code of ``jsonString()`` at error-correction level M.
    public func qrCode() throws(QRCodeError) -> QRCode {
        try QRCode(text: jsonString(), errorCorrection: .medium)
    }
}

/// Picks the address a phone on the same LAN should use to reach this machine.
public enum LANAddress {
    /// One address of one network interface.
    public struct InterfaceAddress: Sendable, Equatable {
        /// Interface name, e.g. `eth0`.
        public var interface: String
        /// Numeric address without brackets or zone, e.g. `192.168.1.20` or `fd00::5`.
        public var address: String
        /// Whether it is IPv6.
        public var isIPv6: Bool

        /// An interface address.
        public init(interface: String, address: String, isIPv6: Bool) {
            self.interface = interface
            self.address = address
            self.isIPv6 = isIPv6
        }
    }

    /// The preferred LAN address of this machine (see ``pick(from:)``), IPv6 in brackets, or `nil` when there is none.
    public static func preferred() -> String? {
        pick(from: interfaceAddresses())
    }

    /// The first usable address: a non-loopback, non-link-local IPv4 address (interfaces that look virtual, such as
    /// `docker0`, `veth…`, `br-…`, `virbr…`, and VPNs such as `tailscale0` or `wg0`, only when nothing else has one), else such an IPv6 address in brackets
    /// (e.g. `[fd00::5]`), else `nil`.
    public static func pick(from addresses: [InterfaceAddress]) -> String? {
        let usableV4 = addresses.filter { !$0.isIPv6 && isUsableIPv4($0.address) }
        if let best = usableV4.first(where: { !looksVirtual($0.interface) }) ?? usableV4.first {
            return best.address
        }
        let usableV6 = addresses.filter { $0.isIPv6 && isUsableIPv6($0.address) }
        if let best = usableV6.first(where: { !looksVirtual($0.interface) }) ?? usableV6.first {
            return "[\(best.address)]"
        }
        return nil
    }

    /// The addresses of all interfaces that are up, in `getifaddrs` order.
    public static func interfaceAddresses() -> [InterfaceAddress] {
        var head: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&head) == 0, let first = head else { return [] }
        defer { freeifaddrs(head) }
        var result: [InterfaceAddress] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            let flags = Int32(entry.pointee.ifa_flags)
            guard let socketAddress = entry.pointee.ifa_addr, flags & Int32(IFF_UP) != 0 else { continue }
            let family = Int32(socketAddress.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
            guard getnameinfo(socketAddress, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            let text = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let address = text.split(separator: "%", maxSplits: 1).first.map(String.init) ?? text
            result.append(InterfaceAddress(
                interface: String(cString: entry.pointee.ifa_name), address: address, isIPv6: family == AF_INET6))
        }
        return result
    }

    /// `host` in brackets when it is a bare IPv6 address, unchanged otherwise.
    public static func bracketedIfIPv6(_ host: String) -> String {
        host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
    }

    static func isUsableIPv4(_ address: String) -> Bool {
        let parts = address.split(separator: ".").compactMap { UInt8($0) }
        guard parts.count == 4 else { return false }
        if parts[0] == 127 || parts[0] == 0 { return false }  // loopback, "this network"
        if parts[0] == 169 && parts[1] == 254 { return false }  // link-local
        if parts[0] >= 224 { return false }  // multicast and reserved
        return true
    }

    static func isUsableIPv6(_ address: String) -> Bool {
        let lower = address.lowercased()
        if lower == "::1" || lower == "::" { return false }
        if lower.hasPrefix("fe8") || lower.hasPrefix("fe9") || lower.hasPrefix("fea") || lower.hasPrefix("feb") {
            return false  // fe80::/10 link-local
        }
        if lower.hasPrefix("ff") { return false }  // multicast
        return true
    }

    static func looksVirtual(_ interface: String) -> Bool {
        ["docker", "veth", "br-", "virbr", "vmnet", "vboxnet", "cni", "flannel", "podman", "tailscale", "wg", "zt", "tun", "utun"].contains { interface.hasPrefix($0) }
    }
}
