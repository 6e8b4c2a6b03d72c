import Testing
@testable import BridgeDiscovery

/// `discover`'s state without a daemon: TXT diffs, conflicts, settling.
///
/// Times are passed in.
@Suite("Discovery watcher", .tags(.unit))
struct DiscoveryWatcherTests {
    let start = ContinuousClock.now

    func service(_ name: String, host: String = "desk.local", port: UInt16 = 9099, ip: String = "198.18.0.2",
                 txt: [String: String] = ["v": "1", "auth": "token"]) -> ResolvedService {
        ResolvedService(instance: ServiceInstance(name: name, type: "_openagents._tcp"), hostName: host, port: port,
                        addresses: [ServiceAddress(ip: ip, family: .ipv4)], txt: txt, interfaces: ["eth0"])
    }

    func conflicts(_ events: [WatchEvent]) -> [DiscoveryConflict] {
        events.compactMap {
            guard case .conflict(let c) = $0 else { return nil }
            return c
        }
    }

    @Test("a TXT change is reported as added, removed and changed keys")
    func txtDiff() {
        var watcher = DiscoveryWatcher()
        _ = watcher.apply(.added(service("Desk")), at: start)
        let events = watcher.apply(.updated(service("Desk", txt: ["v": "2", "tls": "1"])), at: start + .seconds(1))
        guard case .updated(_, let diff)? = events.first else {
            Issue.record("no update: \(events)")
            return
        }
        #expect(diff.txt.added == ["tls": "1"])
        #expect(diff.txt.removed == ["auth": "token"])
        #expect(diff.txt.changed == ["v": TXTDiff.Change(old: "1", new: "2")])
        #expect(diff.lines == ["- auth=token", "+ tls=1", "~ v: 1 -> 2"])
        #expect(conflicts(events).isEmpty)
    }

    @Test("an update of port and addresses lists them; an unchanged TXT gives no TXT lines")
    func otherChanges() {
        var watcher = DiscoveryWatcher()
        _ = watcher.apply(.added(service("Desk")), at: start)
        let events = watcher.apply(.updated(service("Desk", port: 9100, ip: "198.18.0.9")), at: start)
        guard case .updated(_, let diff)? = events.first else {
            Issue.record("no update")
            return
        }
        #expect(diff.txt.isEmpty)
        #expect(diff.lines == ["~ port: 9099 -> 9100", "+ address 198.18.0.9", "- address 198.18.0.2"])
    }

    @Test("one name answered by two hosts is a shared-name conflict, reported once, with a fix about the name (no flag)")
    func sharedName() {
        var watcher = DiscoveryWatcher()
        #expect(conflicts(watcher.apply(.added(service("Desk")), at: start)).isEmpty)
        let events = watcher.apply(.updated(service("Desk", host: "other.local", ip: "198.18.0.3")), at: start)
        let found = conflicts(events)
        #expect(found == [.sharedName(instance: ServiceInstance(name: "Desk", type: "_openagents._tcp"), hosts: ["desk.local", "other.local"])])
        #expect(found.first?.settings == [.name(suggested: "Desk 2"), .interface])
        #expect(found.first?.fix.contains("--") == false, "the command line names the flag: \(found.first?.fix ?? "")")
        // Flapping back does not report it again.
        #expect(conflicts(watcher.apply(.updated(service("Desk")), at: start)).isEmpty)
    }

    @Test("'Desk #2' on another host beside 'Desk' is a rename after a collision, whichever comes first")
    func renamedAfterCollision() {
        var watcher = DiscoveryWatcher()
        _ = watcher.apply(.added(service("Desk")), at: start)
        let found = conflicts(watcher.apply(.added(service("Desk #2", host: "other.local")), at: start))
        #expect(found.count == 1)
        guard case .renamedAfterCollision(let original, let renamed, let originalHost, let renamedHost)? = found.first else {
            Issue.record("no rename conflict")
            return
        }
        #expect(original == "Desk" && renamed.name == "Desk #2" && originalHost == "desk.local" && renamedHost == "other.local")
        #expect(found.first?.explanation.contains("renamed") == true)

        var reversed = DiscoveryWatcher()
        _ = reversed.apply(.added(service("Desk #2", host: "other.local")), at: start)
        #expect(conflicts(reversed.apply(.added(service("Desk")), at: start)) == found)
    }

    @Test("a name renamed twice on one host keeps renaming; once is not that")
    func keepsRenaming() {
        var watcher = DiscoveryWatcher()
        _ = watcher.apply(.added(service("Desk", host: "desk.local")), at: start)
        _ = watcher.apply(.removed(ServiceInstance(name: "Desk", type: "_openagents._tcp")), at: start)
        let once = conflicts(watcher.apply(.added(service("Desk #2")), at: start))
        #expect(!once.contains { $0.kind == "keeps_renaming" })
        _ = watcher.apply(.removed(ServiceInstance(name: "Desk #2", type: "_openagents._tcp")), at: start)
        let twice = conflicts(watcher.apply(.added(service("Desk #3")), at: start))
        #expect(twice.contains(.keepsRenaming(base: "Desk", host: "desk.local", names: ["Desk", "Desk #2", "Desk #3"])))
        _ = watcher.apply(.removed(ServiceInstance(name: "Desk #3", type: "_openagents._tcp")), at: start)
        #expect(!conflicts(watcher.apply(.added(service("Desk #4")), at: start)).contains { $0.kind == "keeps_renaming" })
    }

    @Test("different names on different hosts are no conflict; a name ending in '#1' or '#x' is not a rename")
    func noConflict() {
        var watcher = DiscoveryWatcher()
        _ = watcher.apply(.added(service("Desk")), at: start)
        #expect(conflicts(watcher.apply(.added(service("Laptop", host: "laptop.local")), at: start)).isEmpty)
        #expect(DiscoveryConflict.renamedBase(of: "Desk #1") == nil)
        #expect(DiscoveryConflict.renamedBase(of: "Desk #x") == nil)
        #expect(DiscoveryConflict.renamedBase(of: "Desk #12")?.base == "Desk")
        #expect(DiscoveryConflict.renamedBase(of: "Desk #12")?.number == 12)
    }

    @Test("an ALL_FOR_NOW that comes before any service does not settle a browse that just started, nor one whose sighting is being probed")
    func earlyAllForNow() {
        var watcher = DiscoveryWatcher(startedAt: start)
        _ = watcher.apply(.allForNow, at: start + .milliseconds(16))
        #expect(!watcher.isSettled(at: start + .milliseconds(100), quietFor: .milliseconds(400)))
        watcher.touch(at: start + .milliseconds(300))
        #expect(!watcher.isSettled(at: start + .milliseconds(600), quietFor: .milliseconds(400)))
        #expect(watcher.isSettled(at: start + .milliseconds(700), quietFor: .milliseconds(400)))
    }

    @Test("settled once ALL_FOR_NOW came and nothing happened for the quiet time; services keep their order")
    func settling() {
        var watcher = DiscoveryWatcher()
        _ = watcher.apply(.added(service("B")), at: start)
        _ = watcher.apply(.added(service("A", host: "a.local")), at: start)
        #expect(!watcher.isSettled(at: start + .seconds(5), quietFor: .milliseconds(400)))
        _ = watcher.apply(.allForNow, at: start + .milliseconds(100))
        #expect(!watcher.isSettled(at: start + .milliseconds(300), quietFor: .milliseconds(400)))
        #expect(watcher.isSettled(at: start + .milliseconds(400), quietFor: .milliseconds(400)))
        #expect(watcher.present.map(\.instance.name) == ["B", "A"])
        _ = watcher.apply(.removed(ServiceInstance(name: "B", type: "_openagents._tcp")), at: start + .seconds(1))
        #expect(watcher.present.map(\.instance.name) == ["A"])
        #expect(!watcher.isSettled(at: start + .seconds(1), quietFor: .milliseconds(400)))
    }
}

/// Service types from the meta-query, host names, interface names and host lookups, without a daemon.
@Suite("Service types and host lookups", .tags(.unit))
struct ServiceTypeSightingTests {
    @Test("dns_sd's meta-query answer (name '_openagents', type '_tcp.local.') is the type _openagents._tcp")
    func metaQueryReply() {
        #expect(ServiceTypeSighting.fromMetaQueryReply(name: "_openagents", type: "_tcp.local.", interface: "eth0")
                == ServiceTypeSighting(type: "_openagents._tcp", domain: "local", interface: "eth0"))
        #expect(ServiceTypeSighting.fromMetaQueryReply(name: "_ipp", type: "_udp.local", interface: nil)?.type == "_ipp._udp")
        #expect(ServiceTypeSighting.fromMetaQueryReply(name: "Desk", type: "_tcp.local.", interface: nil) == nil)
        #expect(ServiceTypeSighting.fromMetaQueryReply(name: "_x", type: "_openagents._tcp.local.", interface: nil) == nil)
    }

    @Test("a bare host name gets .local; a dotted one is kept without its trailing dot")
    func mdnsName() {
        #expect(HostResolution.mdnsName("desk") == "desk.local")
        #expect(HostResolution.mdnsName("desk.local.") == "desk.local")
        #expect(HostResolution.mdnsName("desk.example") == "desk.example")
    }

    @Test("an interface that does not exist is a typed error; none means every interface; lo exists")
    func interfaceNames() throws {
        #expect(throws: DiscoveryError.unknownInterface("nosuch0")) { try NetworkInterfaceName.index(of: "nosuch0") }
        #expect(try NetworkInterfaceName.index(of: nil) == nil)
        #expect(try NetworkInterfaceName.index(of: "lo") != nil)
    }

    @Test("a lookup gathers both families, sorted IPv4 first, and returns once both are done", .timeLimit(.minutes(1)))
    func lookupBothFamilies() async throws {
        let (events, continuation) = AsyncStream.makeStream(of: HostLookupEvent.self)
        continuation.yield(.address(ServiceAddress(ip: "fd00:6f61::2", family: .ipv6)))
        continuation.yield(.address(ServiceAddress(ip: "198.18.0.2", family: .ipv4)))
        continuation.yield(.familyDone)
        continuation.yield(.familyDone)
        // The stream stays open and the lookup's own bound is an hour: only "both families done" can end it within
        // the test's time limit (a comparison with the clock failed once at 11.7 s on a loaded 2-core machine).
        let found = try await HostLookup.collect(events, hostName: "desk.local", timeout: .seconds(3600))
        #expect(found.addresses.map(\.ip) == ["198.18.0.2", "fd00:6f61::2"])
        continuation.finish()
    }

    @Test("no answer is hostNotFound; a lost daemon is daemonUnavailable")
    func lookupFailures() async {
        let (silent, keep) = AsyncStream.makeStream(of: HostLookupEvent.self)
        await #expect(throws: DiscoveryError.hostNotFound(name: "ghost.local", seconds: 0.2)) {
            try await HostLookup.collect(silent, hostName: "ghost.local", timeout: .milliseconds(200))
        }
        keep.finish()
        let (gone, continuation) = AsyncStream.makeStream(of: HostLookupEvent.self)
        continuation.yield(.daemonUnavailable("avahi-daemon is not running"))
        await #expect(throws: DiscoveryError.daemonUnavailable(reason: "avahi-daemon is not running")) {
            try await HostLookup.collect(gone, hostName: "desk.local", timeout: .seconds(20))
        }
        continuation.finish()
    }
}

/// `discover --all`'s state and verdict, without a daemon.
@Suite("Service type watcher", .tags(.unit))
struct ServiceTypeWatcherTests {
    let start = ContinuousClock.now

    @Test("no type at all, types without ours, ours among them: three verdicts")
    func verdicts() {
        let none = ServiceTypeWatcher.render([], ours: .openAgents, seconds: 2)
        #expect(none.contains("No mDNS service types at all"))
        let other = [ServiceTypeSighting(type: "_ipp._tcp", interface: "eth0")]
        let without = ServiceTypeWatcher.render(other, ours: .openAgents, seconds: 2)
        #expect(without.contains("_ipp._tcp") && without.contains("mDNS works (1 service type(s) seen) but no _openagents._tcp"))
        #expect(without.contains("discovery on (its default)") && !without.contains("--"), "the command line names the flag: \(without)")
        let with = ServiceTypeWatcher.render(other + [ServiceTypeSighting(type: "_openagents._tcp", interface: "eth0")], ours: .openAgents, seconds: 2)
        #expect(with.contains("_openagents._tcp among them"))
    }

    @Test("types come and go per interface; settled after ALL_FOR_NOW and a quiet time")
    func state() {
        var watcher = ServiceTypeWatcher()
        let ipp = ServiceTypeSighting(type: "_ipp._tcp", interface: "eth0")
        watcher.apply(.added(ipp), at: start)
        watcher.apply(.added(ipp), at: start)
        #expect(watcher.present == [ipp])
        #expect(!watcher.isSettled(at: start + .seconds(1), quietFor: .milliseconds(400)))
        watcher.apply(.allForNow, at: start)
        #expect(watcher.isSettled(at: start + .milliseconds(400), quietFor: .milliseconds(400)))
        watcher.apply(.removed(ipp), at: start + .seconds(1))
        #expect(watcher.present.isEmpty)
        #expect(!watcher.isSettled(at: start + .seconds(1), quietFor: .milliseconds(400)))
    }
}
