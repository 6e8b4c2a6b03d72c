import Synchronization

/// What a callback was handed (updates for the phones, what a job saw), in order, with a ``ChangeSignal`` told at
/// each addition: a test waits for the element it expects instead of sleeping and looking again.
public final class ObservedList<Element: Sendable>: Sendable {
    private let elements = Mutex<[Element]>([])
    private let changes = ChangeSignal()

    /// An empty list.
    public init() {}

    /// Everything added so far, in order.
    public var all: [Element] { elements.withLock { $0 } }

    /// Adds `element` and wakes the waiters.
    public func append(_ element: Element) {
        elements.withLock { $0.append(element) }
        changes.notify()
    }

    /// Waits, within `timeout` of real time, until `condition` holds for the list (checked now and after each
    /// addition); false if it still does not at the end.
    public func wait(timeout: Duration = .seconds(20), until condition: ([Element]) -> Bool) async -> Bool {
        await changes.wait(timeout: timeout) { condition(all) }
    }
}
