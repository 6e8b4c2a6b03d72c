import Foundation
import Logging
import Testing
@testable import BridgePairing
@testable import BridgeServer

/// The hub's connected clients as a value (``ConnectionTable``, issue 31 item 2): ids, what each connection
/// authenticated as, and which connections a revocation closes, without a bridge.
@Suite("Hub connection table", .tags(.unit))
struct HubConnectionTableTests {
    static let logger = Logger(label: "test.hub.connections")

    static func record(device: AuthenticatedDevice?) -> ClientRecord {
        ClientRecord(outbound: OutboundQueue(capacity: 4), logger: logger, device: device?.deviceID)
    }

    static func device(_ id: String, family: String?) -> AuthenticatedDevice {
        AuthenticatedDevice(deviceID: id, deviceName: "phone \(id)", accessTokenExpiresAt: Date(timeIntervalSince1970: 2_000_000_000), familyID: family)
    }

    /// Adds a connection (of `device`) and returns its id.
    static func add(_ table: inout ConnectionTable, _ device: AuthenticatedDevice? = nil) -> ConnectionID {
        table.add(device: device) { _ in record(device: device) }
    }

    /// Whether `stream` ends within 10 s of real time (a stream that never ends fails the test instead of hanging it).
    static func ends(_ stream: AsyncStream<Void>) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in stream {}
                return !Task.isCancelled
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(10))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    @Test("the table tells when it empties: untilEmpty's stream ends as the last connection leaves, at once with none")
    func untilEmpty() async {
        var table = ConnectionTable()
        #expect(await Self.ends(table.untilEmpty()), "no client connected: it ends at once")
        let first = Self.add(&table)
        let second = Self.add(&table)
        let emptied = table.untilEmpty()
        #expect(table.remove(first) != nil)
        #expect(table.emptyWatcherCount == 1, "a client is still connected")
        #expect(table.remove(second) != nil)
        #expect(table.emptyWatcherCount == 0)
        #expect(await Self.ends(emptied), "the last client left")
    }

    @Test("ids count from 1 and are never given again after a connection leaves")
    func idsNeverReused() {
        var table = ConnectionTable()
        #expect(table.isEmpty)
        let first = Self.add(&table)
        let second = Self.add(&table)
        #expect([first, second] == [1, 2])
        #expect(table.remove(first) != nil)
        #expect(table.remove(first) == nil)
        let third = Self.add(&table)
        #expect(third == 3)
        #expect(table.count == 2)
        #expect(Set(table.ids) == [2, 3])
    }

    @Test("the record maker gets the id the connection is given")
    func recordMadeForItsID() {
        var table = ConnectionTable()
        _ = Self.add(&table)
        var given: ConnectionID?
        let id = table.add(device: nil) { id in
            given = id
            return Self.record(device: nil)
        }
        #expect(given == id)
        #expect(id == 2)
    }

    @Test("what a connection authenticated as is kept while it is connected, and forgotten when it leaves")
    func credentials() {
        var table = ConnectionTable()
        let anonymous = Self.add(&table)
        let phone = Self.add(&table, Self.device("d1", family: "f1"))
        let tablet = Self.add(&table, Self.device("d2", family: "f2"))
        #expect(table.device(of: anonymous) == nil)
        #expect(table.device(of: phone)?.deviceID == "d1")
        #expect(table[phone]?.device == "d1")
        #expect(table.authenticated.map(\.id) == [phone, tablet])
        _ = table.remove(phone)
        #expect(table.device(of: phone) == nil)
        #expect(table.authenticated.map(\.device.deviceID) == ["d2"])
    }

    @Test("a revoked device closes all its connections, a revoked family those opened with its tokens, in id order")
    func closedByRevocation() {
        var table = ConnectionTable()
        let a = Self.add(&table, Self.device("d1", family: "f1"))
        _ = Self.add(&table)
        let b = Self.add(&table, Self.device("d2", family: "f2"))
        let c = Self.add(&table, Self.device("d1", family: "f3"))
        #expect(table.closedBy(.device("d1")) == [a, c])
        #expect(table.closedBy(.family("f2")) == [b])
        #expect(table.closedBy(.family("f3")) == [c])
        #expect(table.closedBy(.device("nobody")).isEmpty)
        _ = table.remove(c)
        #expect(table.closedBy(.device("d1")) == [a])
        #expect(table.closedBy(.family("f3")).isEmpty)
    }

    @Test("a connection answering its own logout is not closed by the revocation until its answer is out")
    func loggingOutSpared() {
        var table = ConnectionTable()
        let a = Self.add(&table, Self.device("d1", family: "f1"))
        let b = Self.add(&table, Self.device("d1", family: "f2"))
        table.setLoggingOut(a, true)
        #expect(table.closedBy(.device("d1")) == [b])
        #expect(table.closedBy(.family("f1")).isEmpty)
        table.setLoggingOut(a, false)
        #expect(table.closedBy(.device("d1")) == [a, b])
    }

    @Test("a record changed through the table stays changed; every client leaves its sessions when the agent goes")
    func changedInPlace() {
        var table = ConnectionTable()
        let a = Self.add(&table)
        let b = Self.add(&table)
        table[a]?.pending += 2
        table[a]?.sessions.insert("s1")
        table[b]?.sessions.formUnion(["s1", "s2"])
        #expect(table[a]?.pending == 2)
        #expect(table[b]?.sessions == ["s1", "s2"])
        table.detachAll()
        #expect(table[a]?.sessions.isEmpty == true)
        #expect(table[b]?.sessions.isEmpty == true)
        #expect(table[a]?.pending == 2)
        table[99]?.pending += 1
        #expect(table[99] == nil)
        #expect(table.count == 2)
    }
}
