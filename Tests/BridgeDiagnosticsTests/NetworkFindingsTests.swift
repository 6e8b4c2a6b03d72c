import BridgeDiscovery
import BridgeTestKit
import Testing
@testable import BridgeDiagnostics
#if canImport(Glibc)
import Glibc
#endif

/// doctor's readings of /proc and `ip neigh`, from text: no system state, no network.
@Suite("Network findings", .tags(.unit))
struct NetworkFindingsTests {
    static let tcp = """
      sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
       0: 0100007F:238B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
       1: 0100007F:0035 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
       2: 0200007F:238B 0300007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 100 0 0 10 0
    """
    static let tcp6Any = """
      sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
       0: 00000000000000000000000000000000:238B 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 100 0 0 10 0
    """
    static let tcp6Loopback = """
      sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
       0: 00000000000000000000000001000000:238B 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 100 0 0 10 0
    """

    @Test("listeners on port 9099 (0x238B) only, LISTEN state only; 127.0.0.1 and ::1 are loopback, :: is not")
    func listeners() {
        #expect(NetworkFindings.listeners(port: 9099, tcp: Self.tcp, tcp6: nil) == ["127.0.0.1"])
        #expect(NetworkFindings.listeners(port: 9099, tcp: "", tcp6: Self.tcp6Any) == ["::"])
        #expect(NetworkFindings.listeners(port: 9099, tcp: nil, tcp6: Self.tcp6Loopback) == ["::1"])
        #expect(NetworkFindings.listeners(port: 53, tcp: Self.tcp, tcp6: nil) == ["127.0.0.1"])
        #expect(NetworkFindings.listeners(port: 9099, tcp: nil, tcp6: nil) == nil)
        #expect(NetworkFindings.isLoopback("127.0.0.1") && NetworkFindings.isLoopback("::1") && NetworkFindings.isLoopback("::ffff:127.0.0.1"))
        #expect(!NetworkFindings.isLoopback("::") && !NetworkFindings.isLoopback("0.0.0.0") && !NetworkFindings.isLoopback("198.18.0.2"))
    }

    @Test("IPv6 off for the machine or an interface is found from the sysctl files")
    func ipv6() {
        let files = ["/proc/sys/net/ipv6/conf/all/disable_ipv6": "0\n", "/proc/sys/net/ipv6/conf/eth0/disable_ipv6": "1\n",
                     "/proc/sys/net/ipv6/conf/wlan0/disable_ipv6": "0\n"]
        #expect(NetworkFindings.ipv6Disabled(interfaces: ["eth0", "wlan0"], read: { files[$0] }) == ["eth0"])
        let all = ["/proc/sys/net/ipv6/conf/all/disable_ipv6": "1", "/proc/sys/net/ipv6/conf/eth0/disable_ipv6": "1"]
        #expect(NetworkFindings.ipv6Disabled(interfaces: ["eth0"], read: { all[$0] }) == ["all", "eth0"])
        let on = ["/proc/sys/net/ipv6/conf/all/disable_ipv6": "0", "/proc/sys/net/ipv6/conf/eth0/disable_ipv6": "0"]
        #expect(NetworkFindings.ipv6Disabled(interfaces: ["eth0"], read: { on[$0] }) == [])
    }

    @Test("the neighbour state of an address from 'ip neigh show'; FAILED, INCOMPLETE and a missing entry did not answer")
    func neighbours() {
        let text = """
        198.18.0.250 dev eth0 FAILED
        198.18.0.2 dev eth0 lladdr 5a:1e:00:00:00:02 REACHABLE
        fd00:6f61::9 dev eth0 INCOMPLETE
        """
        #expect(NetworkFindings.neighbourState(of: "198.18.0.250", in: text) == "FAILED")
        #expect(NetworkFindings.neighbourState(of: "198.18.0.2", in: text) == "REACHABLE")
        #expect(NetworkFindings.neighbourState(of: "198.18.0.25", in: text) == nil)
        #expect(!NetworkFindings.neighbourAnswered("FAILED") && !NetworkFindings.neighbourAnswered("INCOMPLETE") && !NetworkFindings.neighbourAnswered(nil))
        #expect(NetworkFindings.neighbourAnswered("REACHABLE") && NetworkFindings.neighbourAnswered("STALE"))
    }

    @Test("a TCP attempt to a closed loopback port is refused", .tags(.loopback))
    func tcp() async throws {
        // A port this test holds bound and never listens on: refused, and nobody else can take it meanwhile.
        let closed = try ReservedPort()
        defer { withExtendedLifetime(closed) {} }
        let refused = await NetworkFindings.connect(to: ServiceAddress(ip: "127.0.0.1", family: .ipv4), port: UInt16(closed.port), timeout: .seconds(2))
        #expect(refused == .refused)
    }

    #if os(Linux)
    @Test("a TCP attempt to a listening loopback port is answered", .tags(.loopback))
    func tcpAnswered() async throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 4) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        #expect(bound)
        let port = UInt16(bigEndian: address.sin_port)
        let answered = await NetworkFindings.connect(to: ServiceAddress(ip: "127.0.0.1", family: .ipv4), port: port, timeout: .seconds(5))
        #expect(answered == .answered)
    }
    #endif
}
