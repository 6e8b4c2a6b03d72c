#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// This machine's host name, short form (up to the first dot): the default service name and a certificate name.
public enum HostName {
    /// `gethostname(2)` up to the first dot, or `oa-bridge` when it is empty or cannot be read.
    public static var current: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "oa-bridge" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let short = name.split(separator: ".").first.map(String.init) ?? name
        return short.isEmpty ? "oa-bridge" : short
    }
}
