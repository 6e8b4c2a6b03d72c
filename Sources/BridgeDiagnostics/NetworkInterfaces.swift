import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The machine's network interfaces, as `doctor` reports them.
public enum NetworkInterfaces {
    /// An interface that is up and can multicast.
    public struct Interface: Sendable, Hashable {
        /// Its name, e.g. `eth0`.
        public var name: String
        /// Its IPv4 and IPv6 addresses.
        public var addresses: [String]
    }

    /// Interfaces that are up, not loopback, and have IFF_MULTICAST.
    public static func multicastCapable() -> [Interface] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var result: [String: [String]] = [:]
        var order: [String] = []
        var node: UnsafeMutablePointer<ifaddrs>? = first
        while let current = node {
            defer { node = current.pointee.ifa_next }
            let flags = Int32(current.pointee.ifa_flags)
            guard flags & Int32(IFF_UP) != 0, flags & Int32(IFF_LOOPBACK) == 0, flags & Int32(IFF_MULTICAST) != 0,
                  let namePointer = current.pointee.ifa_name else { continue }
            let name = String(cString: namePointer)
            if result[name] == nil {
                result[name] = []
                order.append(name)
            }
            if let address = current.pointee.ifa_addr, let text = numericHost(address) {
                result[name, default: []].append(text)
            }
        }
        return order.map { Interface(name: $0, addresses: result[$0] ?? []) }
    }

    static func numericHost(_ address: UnsafeMutablePointer<sockaddr>) -> String? {
        let family = Int32(address.pointee.sa_family)
        guard family == AF_INET || family == AF_INET6 else { return nil }
        let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(address, length, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
