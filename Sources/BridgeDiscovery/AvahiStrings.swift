#if canImport(CAvahi)
import CAvahi
import Foundation

/// Constants whose C spellings import awkwardly.
enum AvahiConstants {
    /// AVAHI_IF_UNSPEC: every interface.
    static let anyInterface = AvahiIfIndex(AVAHI_IF_UNSPEC)
    /// AVAHI_PROTO_UNSPEC: IPv4 and IPv6.
    static let anyProtocol = AvahiProtocol(AVAHI_PROTO_UNSPEC)
}

/// Conversions between Avahi's C values and the module's Swift types.
enum AvahiStrings {
    /// Builds an `AvahiStringList` for the duration of `body`.
    static func withStringList<Result>(_ txt: TXTRecord, _ body: (UnsafeMutablePointer<AvahiStringList>?) -> Result) -> Result {
        var list: UnsafeMutablePointer<AvahiStringList>? = nil
        // avahi_string_list_add_arbitrary prepends, so add in reverse to keep the order.
        for string in txt.strings.reversed() {
            list = string.withUnsafeBufferPointer { buffer in
                avahi_string_list_add_arbitrary(list, buffer.baseAddress, buffer.count)
            }
        }
        defer { avahi_string_list_free(list) }
        return body(list)
    }

    /// Reads an `AvahiStringList` into a TXT record.
    static func txtRecord(from list: UnsafeMutablePointer<AvahiStringList>?) -> TXTRecord {
        var strings: [[UInt8]] = []
        var node = list
        while let current = node {
            let size = avahi_string_list_get_size(current)
            if let text = avahi_string_list_get_text(current) {
                strings.append(Array(UnsafeBufferPointer(start: text, count: size)))
            }
            node = avahi_string_list_get_next(current)
        }
        return TXTRecord(strings: strings)
    }

    /// A Swift address from an `AvahiAddress`, with the interface as zone for IPv6.
    static func address(_ pointer: UnsafePointer<AvahiAddress>, interface: AvahiIfIndex) -> ServiceAddress? {
        var buffer = [CChar](repeating: 0, count: 64)
        guard avahi_address_snprint(&buffer, buffer.count, pointer) != nil else { return nil }
        let text = string(fromNulTerminated: buffer)
        let family: ServiceAddress.Family = pointer.pointee.proto == AvahiProtocol(AVAHI_PROTO_INET6) ? .ipv6 : .ipv4
        var address = ServiceAddress(ip: text, family: family)
        if address.isLinkLocal { address.zone = interfaceName(interface) }
        return address
    }

    /// The name of interface `index` (`eth0`), or the number as text if it has none.
    static func interfaceName(_ index: AvahiIfIndex) -> String? {
        guard index >= 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(UInt32(index), &buffer) != nil else { return String(index) }
        return string(fromNulTerminated: buffer)
    }

    /// Text from a NUL-terminated C buffer.
    static func string(fromNulTerminated buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A C string as Swift text, empty when null.
    static func string(_ pointer: UnsafePointer<CChar>?) -> String {
        pointer.map { String(cString: $0) } ?? ""
    }
}
#endif
