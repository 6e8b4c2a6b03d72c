import BridgeACP
import BridgeProcess
import BridgeSandbox
import BridgeWorkspace
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How `oa-bridge serve` starts a stdio agent (the ``StdioAgentLauncher`` BridgeACP leaves open).
///
/// With ``sandbox``: as a supervised `ChildProcess`, so that it starts from its directory's descriptor (no path to
/// race on) in a process group of its own whose every member is killed when the bridge dies, however it dies, and
/// under a Landlock ruleset (``SandboxPolicy/agent(writable:installation:protected:)``): writes only in its working
/// directory, the `--fs-scope` directory and a temporary directory of its own (its `TMPDIR`, removed when it ends),
/// reads those, the system's directories and its own installation (``AgentInstallation``), never the bridge's own
/// files.
struct BridgeAgentLauncher: StdioAgentLauncher {
    /// What the sandboxed agent may write (descriptors the hub holds while it launches), and the bridge's files.
    ///
    /// `nil`: the agent runs unconfined.
    let sandbox: SandboxPolicy?
    let logger: Logger

    func launch(_ request: StdioAgentLaunchRequest) throws(ACPAgentError) -> ChildProcess {
        // An unconfined agent is a direct child, as before this launcher existed: with every agent under the supervisor,
        // 2 of 4 full `swift test` runs hung (agents gone, their tests never told) and the cause is not found yet. A
        // sandboxed agent keeps the supervisor (and dies with the bridge). Either way the child starts with no signal
        // blocked (issue 25 item 1, finding F5: from a cooperative-pool thread it once started with SIGTERM blocked).
        guard sandbox != nil else { return try StdioAgentProcessLauncher().launch(request) }
        let path = request.workingDirectory ?? "."
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else {
            throw .spawnFailed(ChildProcessError(executable: request.executable, stage: .directory, errno: errno))
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
                throw .launchFailed("the agent cannot be sandboxed here (\(error.description)), so it is not started; agent sandboxing is "
                    + "on for this bridge, and its owner can turn it off in the bridge's settings (sandbox agent: false) to run it unconfined")
            }
            scratch = temporary
            logger.info("the agent runs sandboxed by Landlock", metadata: [
                "abi": "\(ruleset?.abi ?? 0)", "reads": "\(installation.joined(separator: " "))",
                "writes": "\(policy.writable.map(\.name).joined(separator: " "))",
            ])
        }
        // The agent's temporary directory goes when it has ended.
        var whenEnded: (@Sendable () -> Void)?
        if let scratch { whenEnded = { scratch.remove() } }
        do throws(ChildProcessError) {
            return try ChildProcess.spawn(ChildProcess.Request(
                executable: request.executable, arguments: request.arguments, environment: environment,
                directory: .descriptor(directory), input: request.stdin, output: request.stdout, error: request.stderr,
                confinement: ruleset, supervised: true, whenEnded: whenEnded))
        } catch {
            scratch?.remove()
            throw .spawnFailed(error)
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
