#if canImport(CAvahi)
import CAvahi
import Foundation
import Logging
import Synchronization

/// What an Avahi operation (advertiser or browser) is told about its daemon connection.
///
/// Every method is called on the Avahi event-loop thread.
protocol AvahiConnectionDelegate: AnyObject {
    /// The client reached a running state; create entry groups or browsers on `client`.
    func avahiClientRunning(_ client: OpaquePointer)
    /// The host name is being (re)registered or collided; entry groups must be reset.
    func avahiClientRegistering(_ client: OpaquePointer)
    /// The daemon or the bus went away; every object made on the old client is already invalid
    /// and must be forgotten (not freed) — the connection frees the client itself.
    func avahiClientLost(reason: String)
}

/// One connection to avahi-daemon over D-Bus, on its own `AvahiThreadedPoll` thread, that
/// survives daemon and bus restarts by reconnecting.
///
/// Lock discipline: all state is touched only on the event-loop thread (C callbacks, timeouts)
/// or between `avahi_threaded_poll_lock`/`unlock`, which is what `@unchecked Sendable` relies on.
final class AvahiConnection: @unchecked Sendable {
    private let poll: OpaquePointer
    private var client: OpaquePointer?
    private var retryTimeout: OpaquePointer?
    private var retryDelayMilliseconds: UInt32 = 250
    private var lostReported = false
    private var stopped = false
    /// Set by the first ``stop(teardown:)``: a later call returns before touching the poll, which the first freed.
    private let stopClaimed = Atomic<Bool>(false)
    /// The event-loop thread, once it has run a callback (see ``stop(teardown:)``).
    private let eventThread = Mutex<pthread_t?>(nil)
    /// Set once `avahi_threaded_poll_start` has returned.
    private let loopRunning = Atomic<Bool>(false)
    private var unmanagedSelf: Unmanaged<AvahiConnection>?
    private var timers: [Unmanaged<AvahiTimer>] = []
    private let logger: Logger
    weak var delegate: (any AvahiConnectionDelegate)?

    /// Creates the event loop; call `start()` to connect.
    init(logger: Logger) throws(DiscoveryError) {
        AvahiZeroedAllocator.install()
        guard let poll = avahi_threaded_poll_new() else {
            throw .backendFailure(operation: "avahi_threaded_poll_new", message: "out of memory")
        }
        self.poll = poll
        self.logger = logger
    }

    /// Connects and starts the event-loop thread.
    func start() throws(DiscoveryError) {
        unmanagedSelf = Unmanaged.passRetained(self)
        connect()
        guard avahi_threaded_poll_start(poll) >= 0 else {
            throw .backendFailure(operation: "avahi_threaded_poll_start", message: "could not start the Avahi event thread")
        }
        loopRunning.store(true, ordering: .releasing)
    }

    /// Runs `body` with the event loop locked, so Avahi objects may be touched from this thread.
    func withLock<Result>(_ body: () -> Result) -> Result {
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        return body()
    }

    /// Stops the thread, then lets `teardown` free the delegate's objects and frees the client.
    ///
    /// Safe from any thread. Called on the event-loop thread itself (say from a delegate callback), the stop is
    /// handed to a new thread: `avahi_threaded_poll_stop` joins the event thread, and a thread that joins itself
    /// (or locks the poll's mutex it already holds inside a callback) never returns.
    func stop(teardown: @escaping @Sendable () -> Void) {
        // A second stop (say graceful shutdown, then the end of the announcer's run) must not lock the freed poll:
        // glibc aborts on the freed mutex ("Assertion `mutex->__data.__owner == 0' failed"), seen in the lab.
        guard stopClaimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        if isOnEventThread {
            let thread = Thread { self.finishStop(teardown: teardown) }
            thread.name = "oa-avahi-stop"
            thread.start()
            return
        }
        finishStop(teardown: teardown)
    }

    /// Whether the caller runs on this connection's event-loop thread.
    var isOnEventThread: Bool {
        guard let loop = eventThread.withLock({ $0 }) else { return false }
        return pthread_equal(loop, pthread_self()) != 0
    }

    /// Records the event-loop thread; called at the top of every callback the loop runs.
    private func noteEventThread() {
        // Client callbacks also run inside avahi_client_new on the thread calling start(), before the loop runs.
        guard loopRunning.load(ordering: .acquiring) else { return }
        eventThread.withLock { if $0 == nil { $0 = pthread_self() } }
    }

    private func finishStop(teardown: () -> Void) {
        avahi_threaded_poll_lock(poll)
        let alreadyStopped = stopped
        stopped = true
        avahi_threaded_poll_unlock(poll)
        guard !alreadyStopped else { return }
        avahi_threaded_poll_stop(poll)
        teardown()
        if let retryTimeout, let api = avahi_threaded_poll_get(poll) {
            api.pointee.timeout_free(retryTimeout)
        }
        retryTimeout = nil
        if let client { avahi_client_free(client) }
        client = nil
        if let api = avahi_threaded_poll_get(poll) {
            for entry in timers {
                if let timeout = entry.takeUnretainedValue().timeout { api.pointee.timeout_free(timeout) }
                entry.release()
            }
        }
        timers.removeAll()
        avahi_threaded_poll_free(poll)
        unmanagedSelf?.release()
        unmanagedSelf = nil
    }

    /// Runs `action` on the event-loop thread after `milliseconds`.
    ///
    /// Call on the event-loop thread or under the lock. Timers still pending at `stop` are
    /// dropped.
    func schedule(afterMilliseconds milliseconds: UInt32, _ action: @escaping () -> Void) {
        guard !stopped, let api = avahi_threaded_poll_get(poll) else { return }
        let timer = AvahiTimer(action: action)
        timer.connection = self
        var when = timeval()
        avahi_elapse_time(&when, milliseconds, 0)
        let unmanagedTimer = Unmanaged.passRetained(timer)
        timer.timeout = api.pointee.timeout_new(api, &when, { timeout, userdata in
            guard let userdata else { return }
            let timer = Unmanaged<AvahiTimer>.fromOpaque(userdata).takeUnretainedValue()
            timer.connection?.noteEventThread()
            timer.fire()
        }, UnsafeMutableRawPointer(unmanagedTimer.toOpaque()))
        timers.append(unmanagedTimer)
        // Forget fired timers so the list stays short.
        timers.removeAll { entry in
            let timer = entry.takeUnretainedValue()
            guard timer.fired, let timeout = timer.timeout else { return false }
            api.pointee.timeout_free(timeout)
            entry.release()
            return true
        }
    }

    // MARK: - Event-loop side

    private var userdata: UnsafeMutableRawPointer? {
        unmanagedSelf.map { UnsafeMutableRawPointer($0.toOpaque()) }
    }

    private func connect() {
        guard let api = avahi_threaded_poll_get(poll) else { return }
        var error: Int32 = 0
        let flags = AvahiClientFlags(rawValue: AVAHI_CLIENT_NO_FAIL.rawValue)
        let newClient = avahi_client_new(api, flags, { client, state, userdata in
            guard let userdata, let client else { return }
            let connection = Unmanaged<AvahiConnection>.fromOpaque(userdata).takeUnretainedValue()
            connection.clientStateChanged(client, state)
        }, userdata, &error)
        if let newClient {
            client = newClient
            retryDelayMilliseconds = 250
        } else {
            reportLost(reason: AvahiConnection.describe(error: error))
            scheduleReconnect()
        }
    }

    private func clientStateChanged(_ changed: OpaquePointer, _ state: AvahiClientState) {
        noteEventThread()
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            lostReported = false
            delegate?.avahiClientRunning(changed)
        case AVAHI_CLIENT_S_REGISTERING, AVAHI_CLIENT_S_COLLISION:
            delegate?.avahiClientRegistering(changed)
        case AVAHI_CLIENT_CONNECTING:
            reportLost(reason: "avahi-daemon is not running")
        case AVAHI_CLIENT_FAILURE:
            let error = avahi_client_errno(changed)
            reportLost(reason: AvahiConnection.describe(error: error))
            // The client cannot be freed inside its own callback: do it from a timeout.
            scheduleReconnect(immediately: true)
        default:
            break
        }
    }

    private func reportLost(reason: String) {
        if !lostReported {
            lostReported = true
            logger.info("mDNS daemon connection lost", metadata: ["reason": "\(reason)"])
        }
        delegate?.avahiClientLost(reason: reason)
    }

    private func scheduleReconnect(immediately: Bool = false) {
        guard !stopped, let api = avahi_threaded_poll_get(poll) else { return }
        var when = timeval()
        let delay = immediately ? 0 : retryDelayMilliseconds
        avahi_elapse_time(&when, delay, 0)
        if !immediately { retryDelayMilliseconds = min(retryDelayMilliseconds * 2, 2_000) }
        if let retryTimeout {
            api.pointee.timeout_update(retryTimeout, &when)
            return
        }
        retryTimeout = api.pointee.timeout_new(api, &when, { _, userdata in
            guard let userdata else { return }
            let connection = Unmanaged<AvahiConnection>.fromOpaque(userdata).takeUnretainedValue()
            connection.noteEventThread()
            connection.reconnect()
        }, userdata)
    }

    private func reconnect() {
        guard !stopped else { return }
        if let client {
            self.client = nil
            avahi_client_free(client)
        }
        connect()
    }

    /// A readable message for an Avahi error code, with the common causes spelled out.
    static func describe(error: Int32) -> String {
        let text = avahi_strerror(error).map { String(cString: $0) } ?? "error \(error)"
        switch Int(error) {
        case AVAHI_ERR_NO_DAEMON:
            return "avahi-daemon is not reachable over the D-Bus system bus (\(text))"
        case AVAHI_ERR_DISCONNECTED:
            return "avahi-daemon or the D-Bus system bus went away (\(text))"
        default:
            if text.lowercased().contains("bus") || text.lowercased().contains("daemon") {
                return text
            }
            return "\(text) (is the D-Bus system bus running?)"
        }
    }
}

/// A one-shot timer on the Avahi event loop.
private final class AvahiTimer {
    let action: () -> Void
    weak var connection: AvahiConnection?
    var timeout: OpaquePointer?
    var fired = false

    init(action: @escaping () -> Void) {
        self.action = action
    }

    func fire() {
        guard !fired else { return }
        fired = true
        action()
    }
}
#endif
