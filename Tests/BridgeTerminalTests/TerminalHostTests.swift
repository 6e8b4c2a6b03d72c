import BridgeTestKit
import Foundation
import Logging
import Testing
@testable import BridgeTerminal

/// The terminal host without a bridge: limits, and how output reaches the phones (gathered per interval, bounded),
/// on a clock the test moves.
@Suite("Terminal host", .timeLimit(.minutes(1)), .tags(.externalTool))
struct TerminalHostTests {
    private static func host(clock: ManualClock, _ change: (inout TerminalSettings) -> Void = { _ in }) -> TerminalHost {
        var settings = TerminalSettings()
        change(&settings)
        return TerminalHost(settings: settings, clock: clock, logger: Logger(label: "test.terminal"))
    }

    @Test("output that comes faster than the interval is gathered into one notification of at most maxNotificationBytes, the rest counted as skipped; the exit comes last")
    func gathersAndBounds() async throws {
        let clock = ManualClock()
        let host = Self.host(clock: clock) {
            $0.maxNotificationBytes = 16
            $0.notificationInterval = .milliseconds(100)
        }
        let updates = ObservedList<TerminalUpdate>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await host.run { update in updates.append(update) } }
            let terminal = try host.create(
                session: "s", generation: 1, command: "head -c 100000 /dev/zero | tr '\\0' a", args: [], environment: [],
                directory: NSTemporaryDirectory(), outputByteLimit: nil)
            // Everything is read (the output kept for the agent is complete) before the clock moves.
            await terminal.outputEnded()
            #expect(terminal.snapshot.output.utf8.count == 100_000, "the command's output was read")
            #expect(terminal.process.exitStatus == .exited(0))
            #expect(updates.all.isEmpty, "nothing is sent before the interval has passed")
            // The output grace's sleep is over with the output read: the notification's is the only one left on the
            // clock. One interval sends what it gathered, then the exit comes.
            try #require(await clock.waitForSleepers(1), "the notification waits for its interval")
            clock.advance(by: .milliseconds(100))
            try #require(await updates.wait { $0.count >= 2 }, "no update: \(updates.all)")
            let seen = updates.all
            #expect(seen.count == 2)
            #expect(seen[0].output == String(repeating: "a", count: 16))
            #expect(seen[0].skippedBytes == 100_000 - 16)
            #expect(seen[0].exitStatus == nil)
            #expect(seen[1].exitStatus == .exited(0))
            #expect(seen[1].output.isEmpty)
            #expect(terminal.snapshot.truncated == false)
            host.close()
            try await group.waitForAll()
        }
    }

    @Test("at most maxPerSession per session and maxTotal in all; releasing frees a place; release kills")
    func limits() async throws {
        let clock = ManualClock()
        let host = Self.host(clock: clock) {
            $0.maxPerSession = 2
            $0.maxTotal = 3
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await host.run { _ in } }
            func create(_ session: String) throws(TerminalError) -> Terminal {
                try host.create(session: session, generation: 1, command: "sleep 300", args: [], environment: [],
                                directory: NSTemporaryDirectory(), outputByteLimit: nil)
            }
            do {
                let first = try create("a")
                _ = try create("a")
                #expect(throws: TerminalError.tooManyInSession(session: "a", limit: 2)) { try create("a") }
                _ = try create("b")
                #expect(throws: TerminalError.tooMany(limit: 3)) { try create("c") }
                try host.release(first.id, session: "a")
                #expect(await first.process.wait() == .killed(by: SIGKILL))
                _ = try create("c")
                #expect(throws: TerminalError.unknownTerminal(session: "b", terminal: first.id)) { try host.terminal(first.id, session: "b") }
                #expect(host.releaseAll(session: "a") == 1)
                #expect(host.count() == 2)
            } catch {
                Issue.record("unexpected \(error)")
            }
            host.close()
        }
    }

    @Test("a finished terminal's process object is freed: no reference cycle through its termination handler")
    func processFreed() async throws {
        weak var freed: TerminalProcess?
        do {
            let process = try TerminalProcess.launch(command: "true", args: [], environment: [], directory: NSTemporaryDirectory())
            close(process.outputDescriptor)
            freed = process
            #expect(await process.wait() == .exited(0))
            process.reap()
        }
        // Nothing holds it once the test's reference is gone (the reaper's thread holds the ChildProcess, not this).
        #expect(freed == nil)
    }

    @Test("arguments are quoted for the shell; the command line is as written")
    func commandLine() {
        #expect(TerminalProcess.commandLine("ls -la", ["it's", "a b"]) == #"ls -la 'it'\''s' 'a b'"#)
    }
}
