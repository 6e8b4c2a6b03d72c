import BridgeTestKit
import Foundation
import Synchronization
import Testing
@testable import BridgeDiscovery

/// Tests against a real avahi-daemon.
///
/// They run only inside a LAN-lab host (Tests/lab runs them with OA_LAB_LIVE=1 in a network
/// namespace with its own dbus-daemon and avahi-daemon), never in the machine's own network
/// namespace.
@Suite("Live mDNS daemon (lab only)", .enabled(if: LiveDaemon.enabled, "set by Tests/lab inside a lab host"), .serialized, .tags(.externalTool))
struct LiveDaemonTests {
    @Test("advertise, browse, update TXT, withdraw", arguments: LiveDaemon.backendNames)
    func roundTrip(backendName: String) async throws {
        let backend = try LiveDaemon.backend(named: backendName)
        let type = try ServiceType("_oatest\(LiveDaemon.suffix)._tcp")
        let name = "Live \(backendName) \(UUID().uuidString.prefix(6))"
        var txt = try TXTRecord(["txtvers": "1", "path": "/"])
        let advertisement = backend.advertise(try ServiceRegistration(name: name, type: type, port: 9099, txt: txt))
        let registered = try await LiveDaemon.first(advertisement.events, within: .seconds(10)) {
            if case .registered(let actual) = $0 { return actual }
            return nil
        }
        #expect(registered == name)

        let browse = EventRecorder(backend.browse(type, domain: nil))
        defer { browse.stop() }
        let added = try await browse.wait(within: .seconds(10)) {
            if case .added(let service) = $0, service.instance.name == name { return service }
            return nil
        }
        #expect(added.port == 9099)
        #expect(added.txt["txtvers"] == "1")
        #expect(added.isLocal)
        #expect(!added.addresses.isEmpty)

        try txt.set("path", "/v2")
        advertisement.updateTXT(txt)
        let updated = try await browse.wait(within: .seconds(10)) {
            if case .updated(let service) = $0, service.instance.name == name, service.txt["path"] == "/v2" { return service }
            return nil
        }
        #expect(updated.port == 9099)

        advertisement.cancel()
        let removed = try await browse.wait(within: .seconds(10)) {
            if case .removed(let instance) = $0, instance.name == name { return instance }
            return nil
        }
        #expect(removed.type == type.rawValue)
    }

    @Test("a second service with the same name is renamed and reported as a collision", arguments: LiveDaemon.backendNames)
    func collision(backendName: String) async throws {
        let backend = try LiveDaemon.backend(named: backendName)
        let type = try ServiceType("_oatest\(LiveDaemon.suffix)._tcp")
        let name = "Same \(UUID().uuidString.prefix(6))"
        let first = backend.advertise(try ServiceRegistration(name: name, type: type, port: 9001))
        defer { first.cancel() }
        _ = try await LiveDaemon.first(first.events, within: .seconds(10)) {
            if case .registered(let actual) = $0 { return actual }
            return nil
        }
        let second = backend.advertise(try ServiceRegistration(name: name, type: type, port: 9002))
        defer { second.cancel() }
        let renamed = try await LiveDaemon.first(second.events, within: .seconds(15)) {
            if case .registered(let actual) = $0 { return actual }
            return nil
        }
        #expect(renamed != name)
        #expect(renamed.hasPrefix(name))
    }
}

/// Helpers for the live tests.
enum LiveDaemon {
    static var enabled: Bool { ProcessInfo.processInfo.environment["OA_LAB_LIVE"] == "1" }
    static let suffix = String(ProcessInfo.processInfo.processIdentifier % 10_000)
    static let backendNames = ["avahi", "dnssd"]

    struct Timeout: Error, CustomStringConvertible {
        var description: String
    }

    static func backend(named name: String) throws -> any DiscoveryBackend {
        switch name {
        case "avahi": return AvahiBackend()
        default: return DNSSDBackend()
        }
    }

    /// The first value `match` extracts from `stream` within `limit`, or a timeout error.
    static func first<Element: Sendable, Value: Sendable>(
        _ stream: AsyncStream<Element>, within limit: Duration, _ match: @escaping @Sendable (Element) -> Value?
    ) async throws -> Value {
        let recorder = EventRecorder(stream)
        defer { recorder.stop() }
        return try await recorder.wait(within: limit, match)
    }
}

/// Records every element of a stream in the background so tests can wait for one with a deadline
/// (cancelling a task blocked in `AsyncStream.next()` would end the stream itself).
final class EventRecorder<Element: Sendable>: Sendable {
    private let state = LockedList<Element>()
    /// Told of every element recorded: a wait looks again only then.
    private let changes = ChangeSignal()
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<Element>) {
        let state = self.state
        let changes = self.changes
        task = Task {
            for await element in stream {
                state.withLock { $0.append(element) }
                changes.notify()
            }
        }
    }

    /// Waits until an element (recorded before or after the call) matches; each element matches once.
    func wait<Value: Sendable>(within limit: Duration, _ match: @escaping @Sendable (Element) -> Value?) async throws -> Value {
        var found: Value?
        _ = await changes.wait(timeout: limit) {
            found = state.withLock { elements in
                for (index, element) in elements.enumerated() {
                    if let value = match(element) {
                        elements.removeSubrange(...index)
                        return value
                    }
                }
                return nil
            }
            return found != nil
        }
        if let found { return found }
        let seen = state.withLock { $0.map { String(describing: $0) } }
        throw LiveDaemon.Timeout(description: "nothing matched within \(limit); unmatched events: \(seen)")
    }

    func stop() { task.cancel() }
}

/// An array behind a lock, shareable between the recording task and the test.
final class LockedList<Element: Sendable>: Sendable {
    private let elements = Mutex<[Element]>([])

    func withLock<Result>(_ body: (inout [Element]) -> Result) -> Result {
        elements.withLock { body(&$0) }
    }
}
