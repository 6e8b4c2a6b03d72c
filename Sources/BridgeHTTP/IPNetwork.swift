#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 network in CIDR notation (`192.168.1.0/24`, `fd00::/8`, or a single address such as `10.0.0.7`).
///
/// IPv4-mapped IPv6 addresses (`::ffff:10.0.0.7`) are treated as the IPv4 address they carry.
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The network's address bytes (4 for IPv4, 16 for IPv6), host bits cleared.
    public let address: [UInt8]
    /// The prefix length in bits.
    public let prefixLength: Int

    /// Parses `a.b.c.d/n` or `ipv6/n` (the prefix defaults to the full length); `nil` if malformed.
    public init?(_ text: String) {
        let parts = text.trimmingCharacters(in: " \t").split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let bytes = IPNetwork.parse(String(parts[0])) else { return nil }
        let full = bytes.count * 8
        var length = full
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...full).contains(parsed), parts[1].allSatisfy(\.isASCII) else { return nil }
            length = parsed
        }
        self.address = IPNetwork.masked(bytes, to: length)
        self.prefixLength = length
    }

    /// Whether `address` (a literal, optionally with `%zone`, brackets or an IPv4 `:port`) lies in this network.
    public func contains(_ address: String) -> Bool {
        guard let bytes = IPNetwork.parse(IPNetwork.stripped(address)), bytes.count == self.address.count else { return false }
        return IPNetwork.masked(bytes, to: prefixLength) == self.address
    }

    /// `a.b.c.d/n` or the IPv6 text form with `/n`.
    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = address.count == 4 ? AF_INET : AF_INET6
        let text = address.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
                ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        }
        return "\(text)/\(prefixLength)"
    }

    /// Whether `address` is a loopback address (127.0.0.0/8, ::1, or IPv4-mapped 127.x).
    public static func isLoopback(_ address: String) -> Bool {
        loopback.contains { $0.contains(address) }
    }

    private static let loopback = ["127.0.0.0/8", "::1/128"].compactMap(IPNetwork.init)

    /// Drops brackets, a zone and an IPv4 port.
    static func stripped(_ address: String) -> String {
        var host = address.trimmingCharacters(in: " \t")
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            host = String(host[host.index(after: host.startIndex)..<close])
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            host = String(host[..<colon])
        }
        if let zone = host.firstIndex(of: "%") { host = String(host[..<zone]) }
        return host
    }

    /// The address bytes of an IPv4 or IPv6 literal; IPv4-mapped IPv6 comes back as its 4 IPv4 bytes.
    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if text.contains("."), !text.contains(":"), inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard text.contains(":"), inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12..<16]) }
        return bytes
    }

    static func masked(_ bytes: [UInt8], to length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bits = min(max(length - index * 8, 0), 8)
            return bits == 8 ? byte : byte & ~(UInt8(0xFF) >> bits)
        }
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var scalars = Substring(self)
        while let first = scalars.first, set.contains(first) { scalars.removeFirst() }
        while let last = scalars.last, set.contains(last) { scalars.removeLast() }
        return String(scalars)
    }
}
