public import BridgeDiscovery
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `doctor` reads about this machine's network beyond the interface list: IPv6 switches, listening
/// sockets, TCP reachability of an address and its ARP/NDP neighbour state.
///
/// Readers take their inputs as text where they can, so the parsing is tested without the system.
public enum NetworkFindings {
    /// Every interface that is up and not loopback, with its flags.
    public struct InterfaceState: Sendable, Hashable {
        /// Its name, for example `eth0`.
        public var name: String
        /// Whether it has IFF_MULTICAST.
        public var multicast: Bool
        /// Its IPv4 and IPv6 addresses.
        public var addresses: [String]
    }

    /// The interfaces that are up and not loopback, multicast-capable or not, in the system's order.
    public static func upInterfaces() -> [InterfaceState] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var states: [String: InterfaceState] = [:]
        var order: [String] = []
        var node: UnsafeMutablePointer<ifaddrs>? = first
        while let current = node {
            defer { node = current.pointee.ifa_next }
            let flags = Int32(current.pointee.ifa_flags)
            guard flags & Int32(IFF_UP) != 0, flags & Int32(IFF_LOOPBACK) == 0, let namePointer = current.pointee.ifa_name else { continue }
            let name = String(cString: namePointer)
            if states[name] == nil {
                states[name] = InterfaceState(name: name, multicast: flags & Int32(IFF_MULTICAST) != 0, addresses: [])
                order.append(name)
            }
            if let address = current.pointee.ifa_addr, let text = NetworkInterfaces.numericHost(address) {
                states[name]?.addresses.append(text)
            }
        }
        return order.compactMap { states[$0] }
    }

    // MARK: - IPv6

    /// Where IPv6 is switched off: `all` (the whole machine) and/or interface names; `nil` when this system has no
    /// such switches (not Linux).
    ///
    /// `read` returns a file's contents (tests pass a dictionary).
    public static func ipv6Disabled(interfaces: [String], read: (String) -> String? = readFile) -> [String]? {
        guard read("/proc/sys/net/ipv6/conf/all/disable_ipv6") != nil || read("/proc/net/if_inet6") != nil else {
            #if os(Linux)
            return ["all"]  // no IPv6 in this kernel (ipv6.disable=1 on the kernel command line)
            #else
            return nil
            #endif
        }
        var off: [String] = []
        if read("/proc/sys/net/ipv6/conf/all/disable_ipv6")?.trimmingCharacters(in: .whitespacesAndNewlines) == "1" { off.append("all") }
        for name in interfaces where read("/proc/sys/net/ipv6/conf/\(name)/disable_ipv6")?.trimmingCharacters(in: .whitespacesAndNewlines) == "1" {
            off.append(name)
        }
        return off
    }

    // MARK: - Listening sockets

    /// The local addresses of TCP sockets listening on `port`, from `/proc/net/tcp` and `/proc/net/tcp6` text
    /// (`nil` when neither can be read: not Linux).
    public static func listeners(port: Int, tcp: String?, tcp6: String?) -> [String]? {
        guard tcp != nil || tcp6 != nil else { return nil }
        var result: [String] = []
        for (text, v6) in [(tcp, false), (tcp6, true)] {
            for line in (text ?? "").split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 3, fields[3] == "0A" else { continue }  // 0A = LISTEN
                let local = fields[1].split(separator: ":")
                guard local.count == 2, Int(local[1], radix: 16) == port else { continue }
                if let address = v6 ? procIPv6(String(local[0])) : procIPv4(String(local[0])) {
                    result.append(address)
                }
            }
        }
        return result
    }

    /// Whether a listening address takes connections from loopback only.
    public static func isLoopback(_ address: String) -> Bool {
        address.hasPrefix("127.") || address == "::1" || address.hasPrefix("::ffff:127.")
    }

    /// `0100007F` (little-endian hex, as /proc prints it) → `127.0.0.1`.
    static func procIPv4(_ hex: String) -> String? {
        guard hex.count == 8, let value = UInt32(hex, radix: 16) else { return nil }
        let bytes = withUnsafeBytes(of: value.littleEndian) { Array($0) }
        return bytes.map(String.init).joined(separator: ".")
    }

    /// /proc's 32 hex digits (four little-endian words) → the IPv6 text form.
    static func procIPv6(_ hex: String) -> String? {
        guard hex.count == 32 else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        for _ in 0..<4 {
            let next = hex.index(index, offsetBy: 8)
            guard let word = UInt32(hex[index..<next], radix: 16) else { return nil }
            bytes += withUnsafeBytes(of: word.littleEndian) { Array($0) }
            index = next
        }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let ok = bytes.withUnsafeBytes { inet_ntop(AF_INET6, $0.baseAddress, &text, socklen_t(text.count)) != nil }
        guard ok else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A file's contents, or `nil`.
    public static func readFile(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }

    // MARK: - Reachability

    /// How a TCP connection attempt went.
    public enum TCPOutcome: String, Sendable, Hashable {
        /// The port accepted the connection.
        case answered
        /// The host answered with a reset: nothing listens there (or a firewall rejects).
        case refused
        /// Nothing answered in time.
        case timeout
        /// The kernel said the host or network is unreachable (no route, no neighbour).
        case unreachable
        /// Anything else.
        case error
    }

    /// Tries a TCP connection to `address` (zone included for link-local) on `port`, within `timeout`, without
    /// blocking a thread: a non-blocking connect asked again every 20 ms.
    public static func connect(to address: ServiceAddress, port: UInt16, timeout: Duration) async -> TCPOutcome {
        #if os(Linux)
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var info: UnsafeMutablePointer<addrinfo>?
        let host = address.description  // fe80::1%eth0 for link-local
        guard getaddrinfo(host, String(port), &hints, &info) == 0, let first = info else { return .error }
        defer { freeaddrinfo(info) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .error }
        defer { close(fd) }
        if Glibc.connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 { return .answered }
        guard errno == EINPROGRESS else { return outcome(errno: errno) }
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            // Asking again tells how the connect went (EISCONN: it did; EALREADY: still under way) without `pollfd`,
            // whose owning C module changes with the build's load order (MemberImportVisibility).
            if Glibc.connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 { return .answered }
            switch errno {
            case EISCONN: return .answered
            case EALREADY, EINPROGRESS, EINTR: break
            case let code: return outcome(errno: code)
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return .timeout
        #else
        return .error  // the reachability row is Linux-only for now
        #endif
    }

    static func outcome(errno code: Int32) -> TCPOutcome {
        switch code {
        case ECONNREFUSED: return .refused
        case EHOSTUNREACH, ENETUNREACH: return .unreachable
        case ETIMEDOUT: return .timeout
        default: return .error
        }
    }

    /// The neighbour state of `ip` in `ip neigh show` output (`REACHABLE`, `STALE`, `FAILED`, `INCOMPLETE`, …), or
    /// `nil` when it has no entry.
    public static func neighbourState(of ip: String, in text: String) -> String? {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.first.map(String.init) == ip, let last = fields.last else { continue }
            return String(last)
        }
        return nil
    }

    /// Whether a neighbour state means the address answered ARP/NDP.
    public static func neighbourAnswered(_ state: String?) -> Bool {
        guard let state else { return false }
        return !["FAILED", "INCOMPLETE", "NONE"].contains(state)
    }
}
