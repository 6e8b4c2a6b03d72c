import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The names a bridge's certificate carries as subject alternative names: the host name, `<host>.local`, the LAN
/// addresses and the Tailscale MagicDNS name when there is one.
///
/// Clients verify the bridge by its pin, not by these names; they are there so that tools which check names
/// (curl with `--pinnedpubkey` and `--insecure` off, a browser's warning page) show something recognisable.
public struct BridgeIdentityNames: Sendable, Hashable {
    /// DNS names, in order, without duplicates.
    public let dnsNames: [String]
    /// IP addresses (IPv4 as 4 bytes, IPv6 as 16), in order, without duplicates; zone-scoped (`%eth0`) ones are left out.
    public let ipAddresses: [[UInt8]]

    /// The names for `hostName` (also as `<host>.local`), the textual `addresses` (IPv4 or IPv6; unparsable ones
    /// are skipped) and `tailscaleName` (a trailing dot is dropped).
    ///
    /// `localhost`, 127.0.0.1 and ::1 are always in.
    public init(hostName: String, addresses: [String] = [], tailscaleName: String? = nil) {
        var dns: [String] = []
        func addDNS(_ name: String) {
            var name = name.trimmingCharacters(in: .whitespaces).lowercased()
            if name.hasSuffix(".") { name.removeLast() }
            if !name.isEmpty, !dns.contains(name) { dns.append(name) }
        }
        let host = hostName.hasSuffix(".local") ? String(hostName.dropLast(6)) : hostName
        addDNS(host)
        if !host.isEmpty { addDNS(host + ".local") }
        if let tailscaleName { addDNS(tailscaleName) }
        addDNS("localhost")
        var ips: [[UInt8]] = []
        for text in ["127.0.0.1", "::1"] + addresses {
            if let bytes = Self.addressBytes(text), !ips.contains(bytes) { ips.append(bytes) }
        }
        self.dnsNames = dns
        self.ipAddresses = ips
    }

    /// The 4 or 16 bytes of an IPv4 or IPv6 address in text, or `nil` (zone-scoped addresses included).
    static func addressBytes(_ text: String) -> [UInt8]? {
        if text.contains("%") { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}
