import CDNSSD
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// dns_sd error codes as `DNSServiceErrorType`, spelled out so they read the same with Avahi's
/// header and Apple's (where the anonymous enums import with different integer types).
enum DNSSDErrorCode {
    static let noError: DNSServiceErrorType = 0
    static let unknown: DNSServiceErrorType = -65537
    static let noSuchName: DNSServiceErrorType = -65538
    static let noMemory: DNSServiceErrorType = -65539
    static let badParam: DNSServiceErrorType = -65540
    static let badReference: DNSServiceErrorType = -65541
    static let badState: DNSServiceErrorType = -65542
    static let badFlags: DNSServiceErrorType = -65543
    static let unsupported: DNSServiceErrorType = -65544
    static let notInitialized: DNSServiceErrorType = -65545
    static let alreadyRegistered: DNSServiceErrorType = -65547
    static let nameConflict: DNSServiceErrorType = -65548
    static let invalid: DNSServiceErrorType = -65549
    static let firewall: DNSServiceErrorType = -65550
    static let incompatible: DNSServiceErrorType = -65551
    static let badInterfaceIndex: DNSServiceErrorType = -65552
    static let refused: DNSServiceErrorType = -65553
    static let noSuchRecord: DNSServiceErrorType = -65554
    static let noAuth: DNSServiceErrorType = -65555
    static let timeout: DNSServiceErrorType = -65568
    /// Apple's code for "mDNSResponder is not running"; Avahi's header lacks it.
    static let serviceNotRunning: DNSServiceErrorType = -65563
    /// Apple's code when the daemon closed the connection (mDNSResponder restarted).
    static let defunctConnection: DNSServiceErrorType = -65569

    /// The constant's name and number, for example `kDNSServiceErr_Unknown (-65537)`.
    static func describe(_ error: DNSServiceErrorType) -> String {
        let names: [DNSServiceErrorType: String] = [
            noError: "NoError", unknown: "Unknown", noSuchName: "NoSuchName", noMemory: "NoMemory",
            badParam: "BadParam", badReference: "BadReference", badState: "BadState", badFlags: "BadFlags",
            unsupported: "Unsupported", notInitialized: "NotInitialized", alreadyRegistered: "AlreadyRegistered",
            nameConflict: "NameConflict", invalid: "Invalid", firewall: "Firewall", incompatible: "Incompatible",
            badInterfaceIndex: "BadInterfaceIndex", refused: "Refused", noSuchRecord: "NoSuchRecord",
            noAuth: "NoAuth", timeout: "Timeout", serviceNotRunning: "ServiceNotRunning",
            defunctConnection: "DefunctConnection",
        ]
        return "kDNSServiceErr_\(names[error] ?? "Other") (\(error))"
    }

    /// Whether `error` means the daemon cannot be reached (or went away), so retrying later helps.
    ///
    /// Avahi's compatibility library maps "no daemon", "D-Bus error" and "disconnected" all to
    /// `kDNSServiceErr_Unknown`, so on Linux that code counts as daemon loss.
    static func meansDaemonUnavailable(_ error: DNSServiceErrorType) -> Bool {
        error == unknown || error == serviceNotRunning || error == defunctConnection || error == notInitialized
    }

    /// Whether retrying the same call cannot help (the arguments are wrong).
    static func isPermanent(_ error: DNSServiceErrorType) -> Bool {
        [badParam, badFlags, unsupported, invalid, badInterfaceIndex, incompatible].contains(error)
    }

    /// The reason text for `daemonUnavailable` events.
    static func daemonReason(_ error: DNSServiceErrorType) -> String {
        #if os(Linux)
        return "avahi-daemon cannot be reached through the dns_sd compatibility library (\(describe(error))); is avahi-daemon running, with the D-Bus system bus?"
        #else
        return "mDNSResponder cannot be reached through dns_sd (\(describe(error)))"
        #endif
    }
}

/// dns_sd flag, type and class values used here.
enum DNSSDConstants {
    static let flagsMoreComing: DNSServiceFlags = 0x1
    static let flagsAdd: DNSServiceFlags = 0x2
    static let typeA: UInt16 = 1
    static let typeAAAA: UInt16 = 28
    static let classIN: UInt16 = 1
    static let interfaceAny: UInt32 = 0
}

/// When to try again while the daemon is unreachable.
///
/// A failed attempt costs one local D-Bus round trip, and dns_sd cannot say when the daemon
/// returns, so: every second for the first ten tries (a daemon that is starting is found within a
/// second), then one second more each time, up to every five seconds.
enum DNSSDRetry {
    /// The delay before attempt `attempts + 1`, for `attempts` ≥ 1.
    static func delay(afterAttempts attempts: Int) -> Duration {
        guard attempts > 10 else { return .seconds(1) }
        return .seconds(min(attempts - 9, 5))
    }
}

/// Process-wide preparation before the first dns_sd call.
enum DNSSDEnvironment {
    private static let prepared: Bool = {
        #if os(Linux)
        // Avahi's compatibility layer otherwise prints a warning on stderr at the first call.
        setenv("AVAHI_COMPAT_NOWARN", "1", 1)
        #endif
        #if canImport(CAvahi)
        // Its refs must start zeroed, or losing the daemon calls a garbage callback (see the type).
        AvahiZeroedAllocator.install()
        #endif
        return true
    }()

    /// Once per process (Linux): sets `AVAHI_COMPAT_NOWARN=1` and installs ``AvahiZeroedAllocator``.
    static func prepare() {
        _ = prepared
    }
}

/// Small conversions between dns_sd's C values and the module's Swift values.
enum DNSSDValues {
    /// The interface name for an index (`eth0`), or `nil`.
    static func interfaceName(_ index: UInt32) -> String? {
        guard index != 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(index, &buffer) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// An A (4 bytes) or AAAA (16 bytes) rdata as an address; link-local IPv6 gets `interface` as zone.
    static func address(rrtype: UInt16, rdata: [UInt8], interface: UInt32) -> ServiceAddress? {
        let family: Int32
        let kind: ServiceAddress.Family
        switch (rrtype, rdata.count) {
        case (DNSSDConstants.typeA, 4):
            family = AF_INET
            kind = .ipv4
        case (DNSSDConstants.typeAAAA, 16):
            family = AF_INET6
            kind = .ipv6
        default:
            return nil
        }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let ok = rdata.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &text, socklen_t(text.count)) != nil
        }
        guard ok else { return nil }
        let ip = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var address = ServiceAddress(ip: ip, family: kind)
        if address.isLinkLocal { address.zone = interfaceName(interface) }
        return address
    }

    /// `desk.local.` → `desk.local`.
    static func withoutTrailingDot(_ name: String) -> String {
        var text = name
        while text.hasSuffix(".") && !text.hasSuffix("\\.") { text.removeLast() }
        return text
    }

    /// This machine's host name as mDNS names it (`desk.local`), from gethostname(2).
    ///
    /// The daemon may have picked another name after a host-name conflict (`desk-2.local`); dns_sd
    /// offers no way to ask, so `isLocal` is a best guess on this backend.
    static let localHostName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let short = name.split(separator: ".").first.map(String.init) ?? name
        return "\(short).local".lowercased()
    }()

    /// Orders addresses: IPv4, then routable IPv6, then link-local IPv6; by text within each.
    static func sorted(_ addresses: some Sequence<ServiceAddress>) -> [ServiceAddress] {
        addresses.sorted { a, b in
            let ka = (a.family == .ipv4 ? 0 : (a.isLinkLocal ? 2 : 1), a.ip, a.zone ?? "")
            let kb = (b.family == .ipv4 ? 0 : (b.isLinkLocal ? 2 : 1), b.ip, b.zone ?? "")
            return ka < kb
        }
    }
}

/// The services this process registers through `DNSSDBackend`, so browse results can say "our own".
final class DNSSDOwnServices: Sendable {
    /// The process-wide registry.
    static let shared = DNSSDOwnServices()
    private let counts = Mutex<[ServiceInstance: Int]>([:])

    /// Records that this process now holds `instance`.
    func insert(_ instance: ServiceInstance) {
        counts.withLock { $0[instance, default: 0] += 1 }
    }

    /// Records that this process no longer holds `instance`.
    func remove(_ instance: ServiceInstance) {
        counts.withLock { counts in
            if let count = counts[instance] {
                counts[instance] = count > 1 ? count - 1 : nil
            }
        }
    }

    /// Whether this process holds `instance`.
    func contains(_ instance: ServiceInstance) -> Bool {
        counts.withLock { $0[instance] != nil }
    }
}

/// The C callbacks: each finds its `DNSSDCallbackBox` through the context pointer and hands Swift
/// values to it.
///
/// They run on the run loop's thread, inside `DNSServiceProcessResult`.
enum DNSSDCallbacks {
    static func box(_ context: UnsafeMutableRawPointer?) -> DNSSDCallbackBox? {
        guard let context else { return nil }
        return Unmanaged<DNSSDCallbackBox>.fromOpaque(context).takeUnretainedValue()
    }

    static func string(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer else { return "" }
        return String(cString: pointer)
    }

    static let register: DNSServiceRegisterReply = { _, flags, error, name, _, _, context in
        guard let box = DNSSDCallbacks.box(context) else { return }
        box.register?(flags, error, DNSSDCallbacks.string(name))
    }

    static let browse: DNSServiceBrowseReply = { _, flags, interface, error, name, type, domain, context in
        guard let box = DNSSDCallbacks.box(context) else { return }
        box.browse?(flags, interface, error, DNSSDCallbacks.string(name), DNSSDCallbacks.string(type), DNSSDCallbacks.string(domain))
    }

    static let resolve: DNSServiceResolveReply = { _, flags, interface, error, _, host, port, txtLength, txt, context in
        guard let box = DNSSDCallbacks.box(context) else { return }
        var bytes: [UInt8] = []
        if let txt, txtLength > 0 {
            bytes = Array(UnsafeBufferPointer(start: txt, count: Int(txtLength)))
        }
        box.resolve?(flags, interface, error, DNSSDCallbacks.string(host), UInt16(bigEndian: port), bytes)
    }

    static let query: DNSServiceQueryRecordReply = { _, flags, interface, error, _, rrtype, _, length, rdata, _, context in
        guard let box = DNSSDCallbacks.box(context) else { return }
        var bytes: [UInt8] = []
        if let rdata, length > 0 {
            bytes = Array(UnsafeRawBufferPointer(start: rdata, count: Int(length)))
        }
        box.query?(flags, interface, error, rrtype, bytes)
    }
}

/// A cheap sign that the mDNS daemon has come back, for the retry loops: dns_sd itself cannot say
/// when the daemon returns.
///
/// On Linux, avahi-daemon listens on `/run/avahi-daemon/socket` (its simple protocol, set up just
/// before it joins D-Bus); a socket left behind by a dead daemon refuses connections. Elsewhere
/// there is no such sign and the retry schedule alone applies.
enum DNSSDDaemonSign {
    /// How often callers look while the daemon is away.
    static let interval: Duration = .milliseconds(250)

    /// Whether a daemon accepts connections right now; `nil` where this cannot be known.
    static func daemonAccepting() -> Bool? {
        #if os(Linux)
        let path = "/run/avahi-daemon/socket"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let fits = path.withCString { source -> Bool in
            guard strlen(source) < capacity else { return false }
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                raw.copyMemory(from: UnsafeRawBufferPointer(start: source, count: strlen(source) + 1))
            }
            return true
        }
        guard fits else { return nil }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        // A listening socket accepts at once (or is busy: EAGAIN); a stale one refuses.
        return result == 0 || errno == EAGAIN || errno == EINPROGRESS
        #else
        return nil
        #endif
    }
}
