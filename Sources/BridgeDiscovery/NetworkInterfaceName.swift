import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns the interface names users give (`--interface eth0`) into the indexes the mDNS APIs take.
public enum NetworkInterfaceName {
    /// The index of interface `name`, or `nil` for "every interface" when `name` is `nil` or empty.
    ///
    /// Throws ``DiscoveryError/unknownInterface(_:)`` when no interface has that name.
    public static func index(of name: String?) throws(DiscoveryError) -> UInt32? {
        guard let name, !name.isEmpty else { return nil }
        let index = if_nametoindex(name)
        guard index != 0 else { throw .unknownInterface(name) }
        return index
    }
}
