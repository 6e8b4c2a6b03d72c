import CDNSSD
import Foundation

// `pollfd` is declared by the C headers both CAvahi and Glibc read; which module owns it depends on the build order
// (a clean build gives it to CAvahi), so MemberImportVisibility needs both imported here.
#if canImport(CAvahi)
import CAvahi
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The callbacks of one `DNSServiceRef`, reached from C through an `Unmanaged` context pointer.
///
/// Lives on the run loop's thread only. Exactly one of the reply closures is set, matching the
/// call that created the ref; `failed` reports `DNSServiceProcessResult` errors (daemon gone).
final class DNSSDCallbackBox {
    /// `DNSServiceRegister` reply: flags, error, the name actually registered.
    var register: ((DNSServiceFlags, DNSServiceErrorType, String) -> Void)?
    /// `DNSServiceBrowse` reply: flags, interface, error, name, type, domain.
    var browse: ((DNSServiceFlags, UInt32, DNSServiceErrorType, String, String, String) -> Void)?
    /// `DNSServiceResolve` reply: flags, interface, error, host target, port (host order), TXT bytes.
    var resolve: ((DNSServiceFlags, UInt32, DNSServiceErrorType, String, UInt16, [UInt8]) -> Void)?
    /// `DNSServiceQueryRecord` reply: flags, interface, error, record type, rdata.
    var query: ((DNSServiceFlags, UInt32, DNSServiceErrorType, UInt16, [UInt8]) -> Void)?
    /// `DNSServiceProcessResult` failed or the socket hung up; the ref is useless from now on.
    var failed: ((DNSServiceErrorType) -> Void)?

    /// The ref, while it is open.
    fileprivate(set) var ref: DNSServiceRef?
    fileprivate var fd: Int32 = -1
    fileprivate var unmanaged: Unmanaged<DNSSDCallbackBox>?

    /// Whether the ref is still open (not closed by its owner).
    var isOpen: Bool { ref != nil }

    fileprivate func clearHandlers() {
        register = nil
        browse = nil
        resolve = nil
        query = nil
        failed = nil
    }
}

/// One thread that owns a set of `DNSServiceRef`s: it polls their socket fds plus a wake-up pipe and
/// calls `DNSServiceProcessResult` when one is readable.
///
/// Every `DNSService*` call that touches a ref happens on this thread; other threads queue work with
/// `perform`.
///
/// Refs are closed with `close(_:)`, which defers `DNSServiceRefDeallocate` (and the release of the
/// callback box) until the current callback has returned, so a callback may close its own ref.
final class DNSSDRunLoop: @unchecked Sendable {
    /// Identifies a scheduled timer, for `cancelTimer`.
    typealias TimerID = Int

    private struct Timer {
        var id: TimerID
        var deadline: ContinuousClock.Instant
        var action: () -> Void
    }

    private let label: String
    // Shared with other threads, under `lock`.
    private let lock = NSLock()
    private var commands: [@Sendable () -> Void] = []
    private var stopRequested = false
    private var started = false
    private var exited = false
    private var stopCompletions: [@Sendable () -> Void] = []
    private var wakeRead: Int32 = -1
    private var wakeWrite: Int32 = -1
    private var thread: Thread?

    // Loop-thread state.
    private var sources: [DNSSDCallbackBox] = []
    private var closing: [DNSSDCallbackBox] = []
    private var timers: [Timer] = []
    private var nextTimerID: TimerID = 1

    /// Creates a loop; `label` names its thread.
    init(label: String) {
        self.label = label
    }

    /// Starts the thread.
    ///
    /// Fails if the wake-up pipe cannot be created.
    func start() throws(DiscoveryError) {
        DNSSDEnvironment.prepare()
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw .backendFailure(operation: "starting the dns_sd event loop", message: "pipe() failed: \(String(cString: strerror(errno)))")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        lock.lock()
        wakeRead = fds[0]
        wakeWrite = fds[1]
        started = true
        let thread = Thread { [self] in self.run() }
        thread.name = label
        self.thread = thread
        lock.unlock()
        thread.start()
    }

    /// Whether the caller runs on this loop's thread.
    var isCurrent: Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let thread else { return false }
        return Thread.current === thread
    }

    /// Queues `block` to run on the loop thread.
    ///
    /// Dropped if the loop has stopped.
    func perform(_ block: @escaping @Sendable () -> Void) {
        lock.lock()
        guard started, !exited, !stopRequested else {
            lock.unlock()
            return
        }
        commands.append(block)
        let fd = wakeWrite
        lock.unlock()
        wake(fd)
    }

    /// Asks the loop to close every ref and end its thread; `completion` runs (on the loop thread, or
    /// at once if the loop already ended) after every ref has been deallocated.
    func stop(completion: (@Sendable () -> Void)? = nil) {
        lock.lock()
        if !started || exited {
            lock.unlock()
            completion?()
            return
        }
        stopRequested = true
        if let completion { stopCompletions.append(completion) }
        let fd = wakeWrite
        lock.unlock()
        wake(fd)
    }

    private func wake(_ fd: Int32) {
        guard fd >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(fd, &byte, 1)  // a full pipe already means "wake up"
    }

    // MARK: - Loop-thread API

    /// Creates a ref with `make`, which receives the context pointer to pass to the `DNSService*`
    /// call and the ref to fill in, and returns that call's error code.
    ///
    /// On success the ref is polled from now on; on failure the box is released and the error
    /// returned.
    func open(
        _ box: DNSSDCallbackBox, _ make: (UnsafeMutableRawPointer, UnsafeMutablePointer<DNSServiceRef?>) -> DNSServiceErrorType
    ) -> DNSServiceErrorType {
        let unmanaged = Unmanaged.passRetained(box)
        var ref: DNSServiceRef?
        let error = make(unmanaged.toOpaque(), &ref)
        guard error == DNSSDErrorCode.noError, let ref else {
            if let ref { DNSServiceRefDeallocate(ref) }
            box.clearHandlers()
            unmanaged.release()
            return error == DNSSDErrorCode.noError ? DNSSDErrorCode.unknown : error
        }
        box.ref = ref
        box.fd = DNSServiceRefSockFD(ref)
        box.unmanaged = unmanaged
        sources.append(box)
        return error
    }

    /// Stops polling `box` and deallocates its ref once the current callback has returned.
    func close(_ box: DNSSDCallbackBox?) {
        guard let box, box.ref != nil, !closing.contains(where: { $0 === box }) else { return }
        sources.removeAll { $0 === box }
        closing.append(box)
    }

    /// Runs `action` on the loop thread after `delay`.
    @discardableResult
    func schedule(after delay: Duration, _ action: @escaping () -> Void) -> TimerID {
        let id = nextTimerID
        nextTimerID += 1
        timers.append(Timer(id: id, deadline: .now + delay, action: action))
        return id
    }

    /// Cancels a timer that has not fired yet.
    func cancelTimer(_ id: TimerID?) {
        guard let id else { return }
        timers.removeAll { $0.id == id }
    }

    // MARK: - The loop

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            runCommands()
            flushClosed()
            lock.lock()
            let stopping = stopRequested
            lock.unlock()
            if stopping { break }
            runDueTimers()
            flushClosed()

            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let polled = sources
            for box in polled { fds.append(pollfd(fd: box.fd, events: Int16(POLLIN), revents: 0)) }
            let result = poll(&fds, nfds_t(fds.count), pollTimeout())
            if result < 0 {
                if errno == EINTR { continue }
                // Unexpected; avoid a busy loop.
                usleep(100_000)
                continue
            }
            if fds[0].revents != 0 {
                while read(wakeRead, &buffer, buffer.count) > 0 {}
            }
            for (index, box) in polled.enumerated() {
                let revents = fds[index + 1].revents
                guard revents != 0, let ref = box.ref, !closing.contains(where: { $0 === box }) else { continue }
                let error: DNSServiceErrorType
                if revents & Int16(POLLNVAL) != 0 {
                    error = DNSSDErrorCode.unknown
                } else {
                    error = DNSServiceProcessResult(ref)
                }
                if error != DNSSDErrorCode.noError {
                    let failed = box.failed
                    close(box)
                    failed?(error)
                }
                flushClosed()
            }
        }
        shutdown()
    }

    private func runCommands() {
        lock.lock()
        let pending = commands
        commands.removeAll()
        lock.unlock()
        for command in pending {
            command()
            flushClosed()
        }
    }

    private func runDueTimers() {
        let now = ContinuousClock.now
        let due = timers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
        guard !due.isEmpty else { return }
        timers.removeAll { $0.deadline <= now }
        for timer in due { timer.action() }
    }

    /// Milliseconds until the next timer, or -1.
    private func pollTimeout() -> Int32 {
        guard let next = timers.map(\.deadline).min() else { return -1 }
        let remaining = next - .now
        if remaining <= .zero { return 0 }
        let ms = remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1
        return Int32(clamping: ms)
    }

    private func flushClosed() {
        while !closing.isEmpty {
            let batch = closing
            closing.removeAll()
            for box in batch {
                if let ref = box.ref { DNSServiceRefDeallocate(ref) }
                box.ref = nil
                box.fd = -1
                box.clearHandlers()
                box.unmanaged?.release()
                box.unmanaged = nil
            }
        }
    }

    private func shutdown() {
        // Commands queued before stop() still run (a cancel, say), then every ref goes.
        runCommands()
        for box in sources { close(box) }
        flushClosed()
        timers.removeAll()
        lock.lock()
        exited = true
        let completions = stopCompletions
        stopCompletions.removeAll()
        commands.removeAll()
        let fds = (wakeRead, wakeWrite)
        wakeRead = -1
        wakeWrite = -1
        thread = nil
        lock.unlock()
        _ = closeDescriptor(fds.0)
        _ = closeDescriptor(fds.1)
        for completion in completions { completion() }
    }
}

/// `close(2)`, named so it does not clash with `DNSSDRunLoop.close(_:)`.
private func closeDescriptor(_ fd: Int32) -> Int32 {
    guard fd >= 0 else { return 0 }
    #if canImport(Darwin)
    return Darwin.close(fd)
    #elseif canImport(Musl)
    return Musl.close(fd)
    #else
    return Glibc.close(fd)
    #endif
}
