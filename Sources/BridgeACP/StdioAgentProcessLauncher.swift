import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starts an agent with Foundation's `Process`: unconfined, in the bridge's process group (an agent started so may
/// outlive a bridge killed with SIGKILL; `oa-bridge serve` uses its own launcher, which ties the agent to the bridge).
public struct StdioAgentProcessLauncher: StdioAgentLauncher {
    /// The launcher.
    public init() {}

    public func launch(_ request: StdioAgentLaunchRequest) throws(ACPAgentError) -> any StdioAgentProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: request.executable)
        process.arguments = request.arguments
        process.environment = request.environment
        if let directory = request.workingDirectory {
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
        }
        process.standardInput = FileHandle(fileDescriptor: request.stdin, closeOnDealloc: false)
        process.standardOutput = FileHandle(fileDescriptor: request.stdout, closeOnDealloc: false)
        process.standardError = FileHandle(fileDescriptor: request.stderr, closeOnDealloc: false)
        let started = FoundationAgentProcess(process)
        process.terminationHandler = { finished in
            started.ended(finished.terminationReason == .uncaughtSignal
                ? .signaled(finished.terminationStatus) : .exited(finished.terminationStatus))
        }
        do {
            try process.run()
        } catch {
            throw ACPAgentError.launchFailed("\(request.executable): \(error.localizedDescription)")
        }
        return started
    }
}

/// An agent process run by Foundation's `Process`.
final class FoundationAgentProcess: StdioAgentProcess {
    private let process: Process
    private let state = Mutex<(exit: StdioAgentExit?, waiters: [CheckedContinuation<StdioAgentExit, Never>])>((nil, []))

    init(_ process: Process) {
        self.process = process
    }

    var processIdentifier: Int32 { process.processIdentifier }

    func terminate() {
        process.terminate()
    }

    func kill() {
        _ = sendSignal(process.processIdentifier, SIGKILL)
    }

    /// Told by the termination handler.
    func ended(_ exit: StdioAgentExit) {
        let waiters = state.withLock { state -> [CheckedContinuation<StdioAgentExit, Never>] in
            guard state.exit == nil else { return [] }
            state.exit = exit
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: exit) }
    }

    func wait() async -> StdioAgentExit {
        let exit = await withCheckedContinuation { continuation in
            let known = state.withLock { state -> StdioAgentExit? in
                if let exit = state.exit { return exit }
                state.waiters.append(continuation)
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
        // swift-corelibs-foundation keeps a Process with a terminationHandler (and its copy of the environment, ~6 KB)
        // alive until waitUntilExit() is called: notes/upstream-swift-corelibs-foundation-process-retained.md. The
        // handler has run, so the process is no longer running and this returns at once.
        process.waitUntilExit()
        return exit
    }
}

// kill(2) under a name the type's own `kill()` does not hide.
private func sendSignal(_ pid: Int32, _ signal: Int32) -> Int32 { kill(pid, signal) }
