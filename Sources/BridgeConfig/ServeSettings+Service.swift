public import BridgeDiscovery
import BridgePairing
public import BridgeServer
import BridgeTerminal
import Foundation
public import Logging

extension ServeSettings {
    /// The `BridgeService` these settings describe: the server configuration (name, address, agent, limits,
    /// plaintext policy), the state directory, the auth mode and the mDNS backend.
    /// - Throws: ``ConfigError`` when the agent command line does not split, or the discovery backend is not
    ///   available on this platform.
    public func serviceOptions(version: String, logger: Logger) throws(ConfigError) -> BridgeService.Options {
        var configuration = BridgeServerConfiguration(serverName: name.value, workingDirectory: workingDirectory.value)
        configuration.host = host.value
        configuration.port = port.value
        configuration.agentCommand = try agent.value.map(CommandLineSplitter.split)
        configuration.agentEnvironment = agentEnv.value
        configuration.agentWorkingDirectory = agentCwd.value
        configuration.fileScope = fsScope.value
        configuration.maxFrameSize = maxFrameSize.value
        configuration.allowedNetworks = allowNetwork.value
        configuration.maxConnections = maxConnections.value
        configuration.maxPendingConnectionsPerAddress = maxPendingPerAddress.value
        configuration.retention = SessionRetention(
            maxIdleSessions: maxIdleSessions.value, maxIdleReplayBytes: maxIdleReplayBytes.value,
            idleTimeout: idleSessionTimeout.value > 0 ? .seconds(idleSessionTimeout.value) : nil)
        configuration.allowPlaintext = allowPlaintext.value
        configuration.terminal.enabled = terminal.value
        configuration.terminal.confinement = terminalConfinement.value
        configuration.sandboxAgent = sandboxAgent.value
        configuration.sandboxAgentWritable = sandboxAgentWrite.value
        configuration.compression = !noCompression.value
        configuration.protectedFiles = try protectedFiles()
        var options = BridgeService.Options(configuration: configuration, stateDirectory: StateDirectory.resolve(override: stateDir.value))
        options.auth = auth.value == .token ? .token(requireApproval: requireApproval.value) : .none
        options.dpop = dpop.value
        options.discovery = try discovery.value.makeBackend(logger: logger, interface: interface.value)
        options.version = version
        return options
    }
}

extension DiscoveryChoice {
    /// The backend that advertises, or `nil` for `off`.
    /// - Throws: ``ConfigError/unsupported(_:)`` for avahi where libavahi-client is not built in.
    public func makeBackend(logger: Logger, interface: String? = nil) throws(ConfigError) -> (any DiscoveryBackend)? {
        let kind: DiscoveryBackendKind
        switch self {
        case .avahi: kind = .avahi
        case .dnssd: kind = .dnssd
        case .off: return nil
        }
        do {
            return try kind.make(logger: logger, interface: interface)
        } catch {
            throw .unsupported(error.description)
        }
    }
}
