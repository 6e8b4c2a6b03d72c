import BridgeTime
import Logging
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One terminal an agent created: its process, the output kept for `terminal/output` (up to its byte limit), the
/// output not yet shown to the phones, and the `terminal/wait_for_exit` requests waiting for the end.
///
/// ``run(settings:clock:sink:)`` (a task of `TerminalHost/run(sink:)`) reads the output pipe with SwiftNIO, hands
/// the phones' share to `sink` at most once per ``TerminalSettings/notificationInterval``, and once the process has
/// ended and its output is read (or ``TerminalSettings/outputGrace`` has passed) hands over the exit status and the
/// waiters. Cancelling it kills the process group.
package final class Terminal: Sendable {
    /// The terminal's id (unique in the bridge).
    package let id: String
    /// Its session.
    let session: String
    /// The agent generation that created it.
    let generation: Int
    /// The process.
    package let process: TerminalProcess
    private let logger: Logger

    private struct State {
        /// What `terminal/output` answers.
        var output: TerminalOutputBuffer
        /// What the phones have not been sent yet.
        var unsent: TerminalOutputBuffer
        /// Set once the process has ended and its output is read.
        var exitStatus: TerminalExitStatus?
        var waiters: [TerminalWaiter] = []
    }

    private let state: Mutex<State>
    /// A signal per batch of output for the phones (at most one pending).
    private let fresh: AsyncStream<Void>
    private let freshSink: AsyncStream<Void>.Continuation
    /// Opened once the output is read to its end (or given up) and no new output can reach the phones.
    private let outputDone = TerminalLatch()

    init(id: String, session: String, generation: Int, process: TerminalProcess, outputLimit: Int, notificationLimit: Int, logger: Logger) {
        self.id = id
        self.session = session
        self.generation = generation
        self.process = process
        self.logger = logger
        state = Mutex(State(output: TerminalOutputBuffer(limit: outputLimit), unsent: TerminalOutputBuffer(limit: notificationLimit)))
        (fresh, freshSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// `terminal/output`'s answer: the kept output, whether some was dropped, and the exit status once the command
    /// has ended and its output is read.
    package var snapshot: (output: String, truncated: Bool, exitStatus: TerminalExitStatus?) {
        state.withLock { state in
            (state.output.text(final: state.exitStatus != nil), state.output.truncated, state.exitStatus)
        }
    }

    /// Waits until the command has ended and its output is read to its end (or given up after the grace period): from
    /// then on the phones get nothing but what was gathered already and the exit.
    ///
    /// What a test waits for before it moves the clock of the notifications.
    package func outputEnded() async {
        await outputDone.wait()
    }

    /// The exit status if the command has ended (and its output is read); otherwise `waiter` is kept for the end.
    package func exitStatus(orWait waiter: TerminalWaiter) -> TerminalExitStatus? {
        state.withLock { state in
            if let status = state.exitStatus { return status }
            state.waiters.append(waiter)
            return nil
        }
    }

    /// Reads the output until the process has ended (see the type's documentation); then hands `sink` the last update.
    func run(settings: TerminalSettings, clock: any BridgeClock, sink: @escaping @Sendable (TerminalUpdate) async -> Void) async {
        let channel = await openOutput()
        let ended = TerminalLatch()
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.notifyPhones(every: settings.notificationInterval, clock: clock, sink: sink) }
                group.addTask {
                    if let channel { await self.read(channel) }
                    ended.open()
                }
                let status = await process.wait()
                logger.info("terminal command ended", metadata: [
                    "exitCode": "\(status.exitCode.map(String.init) ?? "none")", "signal": "\(status.signal ?? "none")",
                ])
                // Output written before the end may still be in the pipe: read it, for at most the grace period (a
                // background child can keep the pipe open).
                await withTaskGroup(of: Void.self) { grace in
                    grace.addTask {
                        try? await clock.sleep(for: settings.outputGrace)
                        if !Task.isCancelled { channel?.channel.close(promise: nil) }
                    }
                    await ended.wait()
                    grace.cancelAll()
                }
                freshSink.finish()
                outputDone.open()
            }
        } onCancel: {
            process.kill()
            channel?.channel.close(promise: nil)
        }
        let status = await process.wait()
        process.reap()
        let last = state.withLock { state -> TerminalUpdate in
            state.exitStatus = status
            let (text, dropped) = state.unsent.take(final: true)
            defer { state.waiters.removeAll() }
            return TerminalUpdate(
                session: session, terminalID: id, output: text, skippedBytes: dropped, exitStatus: status, waiters: state.waiters)
        }
        await sink(last)
    }

    private func openOutput() async -> NIOAsyncChannel<ByteBuffer, Never>? {
        let descriptor = process.outputDescriptor
        do {
            return try await NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .takingOwnershipOfDescriptor(input: descriptor) { channel in
                    channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, Never>(wrappingChannelSynchronously: channel) }
                }
        } catch {
            close(descriptor)
            logger.warning("could not read the terminal's output", metadata: ["error": "\(error)"])
            return nil
        }
    }

    private func read(_ channel: NIOAsyncChannel<ByteBuffer, Never>) async {
        do {
            try await channel.executeThenClose { inbound in
                for try await chunk in inbound {
                    state.withLock { state in
                        state.output.append(chunk.readableBytesView)
                        state.unsent.append(chunk.readableBytesView)
                    }
                    freshSink.yield()
                }
            }
        } catch {
            logger.debug("the terminal's output ended with an error", metadata: ["error": "\(error)"])
        }
    }

    /// Hands the phones' share of new output to `sink`, gathering what comes within `interval` into one update.
    private func notifyPhones(every interval: Duration, clock: any BridgeClock, sink: @Sendable (TerminalUpdate) async -> Void) async {
        // A signal for output an earlier update already took: no wait, nothing to send.
        for await _ in fresh where state.withLock({ $0.unsent.count > 0 || $0.unsent.droppedSinceTake > 0 }) {
            try? await clock.sleep(for: interval)
            let (text, dropped) = state.withLock { $0.unsent.take(final: false) }
            guard !text.isEmpty || dropped > 0 else { continue }
            await sink(TerminalUpdate(session: session, terminalID: id, output: text, skippedBytes: dropped, exitStatus: nil, waiters: []))
        }
    }
}
