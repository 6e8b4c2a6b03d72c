import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Picks the address a phone on the same LAN should use to reach this machine.
public enum LANAddress {
    /// One address of one network interface.
    public struct InterfaceAddress: Sendable, Equatable {
        /// Interface name, for example `eth0`.
        public var interface: String
        /// Numeric address without brackets or zone, for example `192.168.1.20` or `fd00::5`.
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
    /// (for example `[fd00::5]`), else `nil`.
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
