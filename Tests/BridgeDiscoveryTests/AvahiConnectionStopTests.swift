#if canImport(CAvahi)
@testable import BridgeDiscovery
import BridgeTestKit
import Logging
import Synchronization
import Testing

/// `AvahiConnection.stop` from its own event thread, without a daemon: no multicast, only the event loop.
@Suite("Avahi connection stop", .tags(.unit))
struct AvahiConnectionStopTests {
    final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }

    @Test("a stop called on the event-loop thread (a timer or delegate callback) completes instead of joining itself")
    func stopFromTheEventThread() async throws {
        let connection = try AvahiConnection(logger: Logger(label: "test.avahi-stop"))
        try connection.start()
        let tornDown = Flag()
        let onLoop = Flag()
        let changes = ChangeSignal()
        connection.withLock {
            connection.schedule(afterMilliseconds: 10) {
                onLoop.value.store(connection.isOnEventThread, ordering: .releasing)
                connection.stop {
                    tornDown.value.store(true, ordering: .releasing)
                    changes.notify()
                }
            }
        }
        // Bounded: 5 s. On the old code the event thread locked its own mutex and never got here.
        _ = await changes.wait(timeout: .seconds(5)) { tornDown.value.load(ordering: .acquiring) }
        let ranOnLoop = onLoop.value.load(ordering: .acquiring)
        let finished = tornDown.value.load(ordering: .acquiring)
        #expect(ranOnLoop, "the timer did not run on the event thread")
        #expect(finished, "stop from the event thread did not finish within 5 s")
        connection.stop {}  // a second stop is a no-op
    }
}
#endif
