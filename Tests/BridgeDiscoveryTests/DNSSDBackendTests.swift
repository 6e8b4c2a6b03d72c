import CDNSSD
import Foundation
import Synchronization
import Testing
@testable import BridgeDiscovery

/// Unit tests for the dns_sd backend's pieces that need no daemon: value conversions, error
/// classification and the poll() run loop.
///
/// The backend against a real avahi-daemon is exercised in the LAN lab (LiveDaemonTests with
/// OA_LAB_LIVE=1, and Tests/lab with `--backend dnssd`).
@Suite("dns_sd backend pieces", .tags(.unit))
struct DNSSDBackendTests {
    @Test("A and AAAA rdata become addresses; link-local IPv6 gets the interface as zone")
    func addresses() throws {
        let v4 = try #require(DNSSDValues.address(rrtype: DNSSDConstants.typeA, rdata: [198, 18, 0, 2], interface: 0))
        #expect(v4 == ServiceAddress(ip: "198.18.0.2", family: .ipv4))

        var global = [UInt8](repeating: 0, count: 16)
        global[0] = 0xfd
        global[1] = 0x00
        global[2] = 0x6f
        global[3] = 0x61
        global[15] = 2
        let v6 = try #require(DNSSDValues.address(rrtype: DNSSDConstants.typeAAAA, rdata: global, interface: 1))
        #expect(v6 == ServiceAddress(ip: "fd00:6f61::2", family: .ipv6))

        var linkLocal = [UInt8](repeating: 0, count: 16)
        linkLocal[0] = 0xfe
        linkLocal[1] = 0x80
        linkLocal[15] = 1
        let loopbackIndex = if_nametoindex("lo")
        let ll = try #require(DNSSDValues.address(rrtype: DNSSDConstants.typeAAAA, rdata: linkLocal, interface: loopbackIndex))
        #expect(ll.ip == "fe80::1")
        #expect(ll.isLinkLocal)
        if loopbackIndex != 0 {
            #expect(ll.zone == "lo")
            #expect(ll.urlHost == "[fe80::1%25lo]")
        }

        #expect(DNSSDValues.address(rrtype: DNSSDConstants.typeA, rdata: [1, 2, 3], interface: 0) == nil)
        #expect(DNSSDValues.address(rrtype: DNSSDConstants.typeAAAA, rdata: [1, 2, 3, 4], interface: 0) == nil)
        #expect(DNSSDValues.address(rrtype: 16, rdata: [1, 2, 3, 4], interface: 0) == nil)
    }

    @Test("addresses sort IPv4 first, then routable IPv6, then link-local")
    func addressOrder() {
        let sorted = DNSSDValues.sorted([
            ServiceAddress(ip: "fe80::2", family: .ipv6, zone: "eth0"),
            ServiceAddress(ip: "fd00::1", family: .ipv6),
            ServiceAddress(ip: "198.18.0.3", family: .ipv4),
            ServiceAddress(ip: "10.0.0.1", family: .ipv4),
        ])
        #expect(sorted.map(\.ip) == ["10.0.0.1", "198.18.0.3", "fd00::1", "fe80::2"])
    }

    @Test("trailing dots go, escaped dots stay")
    func trailingDot() {
        #expect(DNSSDValues.withoutTrailingDot("desk.local.") == "desk.local")
        #expect(DNSSDValues.withoutTrailingDot("_openagents._tcp.") == "_openagents._tcp")
        #expect(DNSSDValues.withoutTrailingDot("desk.local") == "desk.local")
        #expect(DNSSDValues.withoutTrailingDot("odd\\.") == "odd\\.")
    }

    @Test("error codes: what means 'daemon gone', what is permanent, how they read")
    func errorCodes() {
        #expect(DNSSDErrorCode.noError == DNSServiceErrorType(kDNSServiceErr_NoError))
        #expect(DNSSDErrorCode.unknown == DNSServiceErrorType(kDNSServiceErr_Unknown))
        #expect(DNSSDErrorCode.badParam == DNSServiceErrorType(kDNSServiceErr_BadParam))
        #expect(DNSSDErrorCode.nameConflict == DNSServiceErrorType(kDNSServiceErr_NameConflict))
        #expect(DNSSDErrorCode.meansDaemonUnavailable(DNSSDErrorCode.unknown))
        #expect(DNSSDErrorCode.meansDaemonUnavailable(DNSSDErrorCode.serviceNotRunning))
        #expect(!DNSSDErrorCode.meansDaemonUnavailable(DNSSDErrorCode.badParam))
        #expect(DNSSDErrorCode.isPermanent(DNSSDErrorCode.badParam))
        #expect(DNSSDErrorCode.isPermanent(DNSSDErrorCode.unsupported))
        #expect(!DNSSDErrorCode.isPermanent(DNSSDErrorCode.unknown))
        #expect(DNSSDErrorCode.describe(DNSSDErrorCode.unknown) == "kDNSServiceErr_Unknown (-65537)")
        #expect(DNSSDErrorCode.describe(-1) == "kDNSServiceErr_Other (-1)")
        #expect(DNSSDErrorCode.daemonReason(DNSSDErrorCode.unknown).contains("kDNSServiceErr_Unknown"))
    }

    @Test("collision names follow Avahi's pattern and stay within 63 bytes")
    func alternativeNames() {
        #expect(DNSSDAdvertiser.alternativeName(for: "Desk") == "Desk #2")
        #expect(DNSSDAdvertiser.alternativeName(for: "Desk #2") == "Desk #3")
        #expect(DNSSDAdvertiser.alternativeName(for: "Desk #9") == "Desk #10")
        #expect(DNSSDAdvertiser.alternativeName(for: "Room #A") == "Room #A #2")
        #expect(DNSSDAdvertiser.alternativeName(for: "Desk #") == "Desk # #2")
        let long = String(repeating: "ü", count: 31)  // 62 bytes
        let renamed = DNSSDAdvertiser.alternativeName(for: long)
        #expect(renamed.utf8.count <= 63)
        #expect(renamed.hasSuffix(" #2"))
        #expect(renamed.hasPrefix(String(repeating: "ü", count: 30)))
    }

    @Test("retries: every second at first, then slower, never more than five seconds apart")
    func retryDelays() {
        let delays = (1...20).map { DNSSDRetry.delay(afterAttempts: $0) }
        #expect(delays.prefix(10).allSatisfy { $0 == .seconds(1) })
        #expect(Array(delays[10...13]) == [.seconds(2), .seconds(3), .seconds(4), .seconds(5)])
        #expect(delays.allSatisfy { $0 >= .seconds(1) && $0 <= .seconds(5) })
        #expect(DNSSDRetry.delay(afterAttempts: 10_000) == .seconds(5))
    }

    @Test("our own services are counted: two registrations of one instance, withdrawn one by one")
    func ownServices() {
        let own = DNSSDOwnServices()
        let desk = ServiceInstance(name: "desk", type: "_openagents._tcp")
        let other = ServiceInstance(name: "other", type: "_openagents._tcp")
        own.insert(desk)
        own.insert(desk)
        #expect(own.contains(desk))
        #expect(!own.contains(other))
        own.remove(desk)
        #expect(own.contains(desk))
        own.remove(desk)
        #expect(!own.contains(desk))
        own.remove(desk)
        #expect(!own.contains(desk))
    }

    @Test("the run loop runs queued work and timers on its own thread, in deadline order, then stops")
    func runLoop() async throws {
        let loop = DNSSDRunLoop(label: "oa-dnssd-test")
        try loop.start()
        let log = DNSSDLockedValue<[String]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.perform {
                log.withLock { $0.append(loop.isCurrent ? "perform on loop" : "perform elsewhere") }
                loop.schedule(after: .milliseconds(60)) { log.withLock { $0.append("timer 60") } }
                let cancelled = loop.schedule(after: .milliseconds(30)) { log.withLock { $0.append("cancelled timer") } }
                loop.schedule(after: .milliseconds(20)) { log.withLock { $0.append("timer 20") } }
                loop.cancelTimer(cancelled)
                loop.schedule(after: .milliseconds(100)) { done.resume() }
            }
        }
        #expect(!loop.isCurrent)
        let stopped = DNSSDLockedValue(false)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.stop {
                stopped.withLock { $0 = true }
                done.resume()
            }
        }
        #expect(stopped.withLock { $0 })
        #expect(log.withLock { $0 } == ["perform on loop", "timer 20", "timer 60"])
        // After stop, work is dropped (neither run nor kept: no thread is left to run it) and a completion runs at
        // once. Dropped is seen at once, with no wait: the work's closure is released as `perform` returns.
        let late = DNSSDLockedValue(false)
        loop.stop { late.withLock { $0 = true } }
        #expect(late.withLock { $0 })
        weak var dropped: DroppedWork?
        do {
            let work = DroppedWork()
            dropped = work
            loop.perform {
                _ = work
                log.withLock { $0.append("after stop") }
            }
        }
        #expect(dropped == nil, "work given to a stopped loop is kept")
        #expect(!log.withLock { $0 }.contains("after stop"))
    }

    @Test("a ref that fails to open is not kept: its box is released and its handlers cleared")
    func openFailure() async throws {
        let loop = DNSSDRunLoop(label: "oa-dnssd-test")
        try loop.start()
        let result = DNSSDLockedValue<(error: DNSServiceErrorType, open: Bool, released: Bool)?>(nil)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.perform {
                weak var weakBox: DNSSDCallbackBox?
                var error = DNSSDErrorCode.noError
                var open = true
                do {
                    let box = DNSSDCallbackBox()
                    weakBox = box
                    box.failed = { _ in _ = box }  // a cycle that only clearing the handlers breaks
                    error = loop.open(box) { _, _ in DNSSDErrorCode.badParam }
                    open = box.isOpen
                }
                result.withLock { $0 = (error, open, weakBox == nil) }
                done.resume()
            }
        }
        loop.stop()
        let outcome = try #require(result.withLock { $0 })
        #expect(outcome.error == DNSSDErrorCode.badParam)
        #expect(!outcome.open)
        #expect(outcome.released)
    }
}

/// A value behind a lock (Synchronization.Mutex needs macOS 15; the package supports macOS 14).
private final class DNSSDLockedValue<Value: Sendable>: Sendable {
    private let value: Mutex<Value>

    init(_ value: Value) {
        self.value = Mutex(value)
    }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        value.withLock { body(&$0) }
    }
}

/// What a closure given to a stopped run loop holds: released at once if the work is dropped.
private final class DroppedWork: Sendable {}
