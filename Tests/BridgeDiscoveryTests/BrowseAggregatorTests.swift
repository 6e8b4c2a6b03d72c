import Testing
@testable import BridgeDiscovery

/// The announce / first-seen / stale logic both mDNS browsers share, without a daemon: times are passed in.
@Suite("Browse aggregator", .tags(.unit))
struct BrowseAggregatorTests {
    let desk = ServiceInstance(name: "Desk", type: "_openagents._tcp")
    let laptop = ServiceInstance(name: "Laptop", type: "_openagents._tcp")
    let start = ContinuousClock.now

    func service(_ instance: ServiceInstance, port: UInt16 = 9099, ip: String = "192.168.1.20", txt: [String: String] = ["v": "1"]) -> ResolvedService {
        ResolvedService(instance: instance, hostName: "\(instance.name.lowercased()).local", port: port,
                        addresses: [ServiceAddress(ip: ip, family: .ipv4)], txt: txt, interfaces: ["eth0"])
    }

    @Test("first report is added with the time since the first sighting; the same again is nothing; a change is updated and keeps that time")
    func addedThenUpdated() {
        var aggregator = BrowseAggregator()
        aggregator.sighted(desk, at: start)
        aggregator.sighted(desk, at: start + .seconds(5))  // later sightings do not move the start
        #expect(aggregator.awaitsFirstReport(desk))
        guard case .added(let added)? = aggregator.report(service(desk), at: start + .milliseconds(250)) else {
            Issue.record("no added")
            return
        }
        #expect(added.resolveSeconds == 0.25)
        #expect(!aggregator.awaitsFirstReport(desk))
        let r1 = aggregator.report(service(desk), at: start + .seconds(9))
        #expect(r1 == nil)
        #expect(!aggregator.changes(service(desk)))
        #expect(aggregator.changes(service(desk, port: 9100)))
        guard case .updated(let updated)? = aggregator.report(service(desk, port: 9100), at: start + .seconds(9)) else {
            Issue.record("no updated")
            return
        }
        #expect(updated.port == 9100)
        #expect(updated.resolveSeconds == 0.25)
    }

    @Test("an instance never sighted is added without a resolve time")
    func addedUnsighted() {
        var aggregator = BrowseAggregator()
        guard case .added(let added)? = aggregator.report(service(laptop), at: start) else {
            Issue.record("no added")
            return
        }
        #expect(added.resolveSeconds == nil)
    }

    @Test("gone: removed once if it had been announced, nothing otherwise; a new sighting starts a new resolve time")
    func gone() {
        var aggregator = BrowseAggregator()
        aggregator.sighted(desk, at: start)
        #expect(aggregator.gone(desk) == nil)  // seen, never announced
        aggregator.sighted(desk, at: start + .seconds(1))
        _ = aggregator.report(service(desk), at: start + .seconds(2))
        let r2 = aggregator.gone(desk)
        #expect(r2 == .removed(desk))
        let r3 = aggregator.gone(desk)
        #expect(r3 == nil)
        #expect(!aggregator.isAnnounced(desk))
        aggregator.sighted(desk, at: start + .seconds(10))
        guard case .added(let again)? = aggregator.report(service(desk), at: start + .seconds(10.5)) else {
            Issue.record("no added")
            return
        }
        #expect(again.resolveSeconds == 0.5)
    }

    @Test("after the daemon returns: announced instances are re-resolved; those not seen again are removed, the others stay")
    func staleAfterOutage() {
        var aggregator = BrowseAggregator()
        _ = aggregator.report(service(desk), at: start)
        _ = aggregator.report(service(laptop), at: start)
        #expect(aggregator.hasAnnounced)
        let stale = aggregator.daemonReturned()
        #expect(stale == [desk, laptop])
        #expect(aggregator.isReresolving(desk) && aggregator.awaitsFirstReport(desk))
        // Desk is seen and reported again (unchanged: no event), Laptop is not.
        let r4 = aggregator.report(service(desk), at: start + .seconds(1))
        #expect(r4 == nil)
        #expect(!aggregator.isReresolving(desk))
        let r5 = aggregator.dropStale(stale, seen: [desk])
        #expect(r5 == [.removed(laptop)])
        #expect(aggregator.announcedInstances == [desk])
        #expect(!aggregator.isReresolving(laptop))
        let r6 = aggregator.dropStale(stale, seen: [])
        #expect(r6 == [.removed(desk)])
        let r7 = aggregator.dropStale(stale, seen: [])
        #expect(r7.isEmpty)
    }

    @Test("a re-resolved instance that changed while the daemon was away comes back as updated")
    func changedDuringOutage() {
        var aggregator = BrowseAggregator()
        _ = aggregator.report(service(desk), at: start)
        _ = aggregator.daemonReturned()
        let r8 = aggregator.endReresolving(desk)
        #expect(r8)
        let r9 = aggregator.endReresolving(desk)
        #expect(!r9)
        let event = aggregator.report(service(desk, ip: "192.168.1.21"), at: start + .seconds(3))
        guard case .updated(let updated)? = event else {
            Issue.record("expected updated, got \(String(describing: event))")
            return
        }
        #expect(updated.addresses == [ServiceAddress(ip: "192.168.1.21", family: .ipv4)])
    }
}
