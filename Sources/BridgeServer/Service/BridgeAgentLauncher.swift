import BridgeACP
import BridgeSandbox
import BridgeWorkspace
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How `oa-bridge serve` starts a stdio agent (the ``StdioAgentLauncher`` BridgeACP leaves open). With ``sandbox``:
/// through ``ConfinedProcess``, so that it starts from its directory's descriptor (no path to race on) in a process
/// group of its own whose every member is killed when the bridge dies, however it dies, and under a Landlock
/// ruleset (``SandboxPolicy/agent(writable:installation:protected:)``): writes only in its working directory, the
/// `--fs-scope` directory and a temporary directory of its own (its `TMPDIR`, removed when it ends), reads those, the
/// system's directories and its own installation (``AgentInstallation``), never the bridge's own files.
struct BridgeAgentLauncher: StdioAgentLauncher {
    /// What the sandboxed agent may write (descriptors the hub holds while it launches), and the bridge's files.
    /// `nil`: the agent runs unconfined.
    let sandbox: SandboxPolicy?
    let logger: Logger

    func launch(_ request: StdioAgentLaunchRequest) throws(ACPAgentError) -> any StdioAgentProcess {
        // An unconfined agent starts with Foundation's Process, as before this launcher existed: with every agent under
        // ConfinedProcess, 2 of 4 full `swift test` runs hung (agents gone, their tests never told) and the cause is not
        // found yet; with this, 0 of 5. A sandboxed agent keeps the supervisor (and dies with the bridge).
        guard sandbox != nil else { return try BridgeAgentLauncher.withSignalsUnblocked { () throws(ACPAgentError) in try StdioAgentProcessLauncher().launch(request) } }
        let path = request.workingDirectory ?? "."
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else {
            throw .launchFailed("cannot open the agent's working directory \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(directory) }
        var environment = request.environment
        var ruleset: LandlockRuleset?
        var scratch: ScratchDirectory?
        if var policy = sandbox {
            let temporary = ScratchDirectory(prefix: "oa-bridge-agent")
            if let made = temporary.directory() {
                policy.writable.append(.descriptor(made.descriptor, name: made.path))
                environment["TMPDIR"] = made.path
            }
            policy.readable.append(.descriptor(directory, name: path))
            let installation = AgentInstallation.paths(
                executable: request.executable, arguments: request.arguments, workingDirectory: request.workingDirectory,
                environment: request.environment)
            policy.readable += installation.map(SandboxPolicy.Root.path)
            do {
                ruleset = try LandlockRuleset.build(policy)
            } catch {
                throw .launchFailed("the agent cannot be sandboxed here (\(error.description)), so it is not started; start the bridge "
                    + "without --sandbox-agent to run it unconfined")
            }
            scratch = temporary
            logger.info("the agent runs sandboxed by Landlock", metadata: [
                "abi": "\(ruleset?.abi ?? 0)", "reads": "\(installation.joined(separator: " "))",
                "writes": "\(policy.writable.map(\.name).joined(separator: " "))",
            ])
        }
        do {
            let process = try ConfinedProcess.spawn(ConfinedProcess.Request(
                executable: request.executable, arguments: request.arguments, environment: environment, directory: directory,
                output: request.stdout, error: request.stderr, input: request.stdin, ruleset: ruleset))
            return ConfinedAgentProcess(process: process, scratch: scratch)
        } catch {
            throw .launchFailed("\(request.executable): \(error.description)")
        }
    }

    /// Runs `launch` with the calling thread's signal mask emptied, restoring it after. A child inherits its parent
    /// thread's blocked signals across `exec`, and Foundation's `Process` spawns from the calling thread: from one of
    /// the concurrency pool's threads, which block nearly every signal, the agent started with SIGTERM blocked, ignored
    /// the bridge's stop, and was killed only after ``StdioAgentConfiguration/terminationGrace`` (issue 25 item 1,
    /// finding F5: serve took over 3 s to stop). A signal that arrives meanwhile is handled as on any other thread.
    static func withSignalsUnblocked<T>(_ launch: () throws(ACPAgentError) -> T) throws(ACPAgentError) -> T {
        var none = sigset_t()
        sigemptyset(&none)
        var previous = sigset_t()
        pthread_sigmask(SIG_SETMASK, &none, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        return try launch()
    }
}

/// An agent run by ``ConfinedProcess``; its temporary directory goes when it has ended.
final class ConfinedAgentProcess: StdioAgentProcess {
    private let process: ConfinedProcess
    private let scratch: ScratchDirectory?

    init(process: ConfinedProcess, scratch: ScratchDirectory?) {
        self.process = process
        self.scratch = scratch
    }

    var processIdentifier: Int32 { process.pid }

    func terminate() {
        process.terminate()
    }

    func kill() {
        process.kill()
    }

    func wait() async -> StdioAgentExit {
        let exit = await process.wait()
        scratch?.remove()
        switch exit {
        case .exited(let code): return .exited(code)
        case .signaled(let signal): return .signaled(signal)
        }
    }
}

extension BridgeHub {
    /// The launcher of the agent: sandboxed under ``BridgeServerConfiguration/sandboxAgent`` to the workspace, the
    /// `--fs-scope` directory (the descriptors of ``workspace``, alive while the hub is) and
    /// ``BridgeServerConfiguration/sandboxAgentWritable``; always tied to the bridge.
    func agentLauncher(logger: Logger) -> BridgeAgentLauncher {
        guard configuration.sandboxAgent else { return BridgeAgentLauncher(sandbox: nil, logger: logger) }
        let writable = workspace.terminalPolicy(additional: []).writable + configuration.sandboxAgentWritable.map(SandboxPolicy.Root.path)
        return BridgeAgentLauncher(sandbox: .agent(writable: writable, installation: [], protected: workspace.protected), logger: logger)
    }
}
