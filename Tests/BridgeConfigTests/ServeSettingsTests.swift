import BridgeConfig
import BridgeServer
import Foundation
import Logging
import Synchronization
import Testing

@Suite("serve settings: flags, then OA_BRIDGE_* variables, then the config file, then defaults", .tags(.unit))
struct ServeSettingsTests {
    func file(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "oa-config-\(UUID().uuidString.prefix(8)).yaml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func flags(config: String? = nil, _ change: (inout ServeFlags) -> Void = { _ in }) -> ServeFlags {
        var flags = ServeFlags()
        flags.config = config
        change(&flags)
        return flags
    }

    @Test("each source wins over the ones after it, and says where it came from")
    func precedence() throws {
        let path = try file("port: 9200\nname: FromFile\nhost: 10.0.0.1\nagent: [gemini, --acp]\nagent-env:\n  KEY: v\n")
        let settings = try ServeSettings.resolve(flags(config: path) { $0.port = 9300 }, environment: ["OA_BRIDGE_NAME": "FromEnv", "HOME": "/nonexistent"])
        #expect(settings.port.value == 9300 && settings.port.source == "--port")
        #expect(settings.name.value == "FromEnv" && settings.name.source == "OA_BRIDGE_NAME")
        #expect(settings.host.value == "10.0.0.1" && settings.host.source == path)
        #expect(settings.agent.value == "gemini --acp")
        #expect(settings.agentEnv.value == ["KEY": "v"])
        #expect(settings.maxFrameSize.source == "default")
        #expect(settings.auth.value == .token)
    }

    @Test("flags of every kind: enums, booleans, lists, levels")
    func typedFlags() throws {
        let settings = try ServeSettings.resolve(flags {
            $0.discovery = .off
            $0.auth = AuthMode.none
            $0.requireApproval = true
            $0.allowNetwork = ["10.0.0.0/8"]
            $0.logLevel = .debug
            $0.logFormat = .json
            $0.allowPlaintext = true
        }, environment: ["HOME": "/nonexistent", "OA_BRIDGE_ALLOW_NETWORK": "192.168.0.0/16"])
        #expect(settings.discovery.value == .off && settings.discovery.source == "--discovery")
        #expect(settings.auth.value == AuthMode.none && settings.requireApproval.value && settings.allowPlaintext.value)
        #expect(settings.allowNetwork.value == ["10.0.0.0/8"] && settings.allowNetwork.source == "--allow-network")
        #expect(settings.logLevel.value == .debug && settings.logFormat.value == .json)
    }

    @Test("lists and booleans from the environment")
    func environmentValues() throws {
        let settings = try ServeSettings.resolve(flags(), environment: [
            "HOME": "/nonexistent", "OA_BRIDGE_ALLOW_NETWORK": "192.168.0.0/16, 10.0.0.0/8", "OA_BRIDGE_ALLOW_PLAINTEXT": "yes",
        ])
        #expect(settings.allowNetwork.value == ["192.168.0.0/16", "10.0.0.0/8"])
        #expect(settings.allowPlaintext.value && settings.allowPlaintext.source == "OA_BRIDGE_ALLOW_PLAINTEXT")
    }

    @Test("a bad value names the key, the value, its source and what is expected")
    func badValue() throws {
        #expect(throws: ConfigError.self) {
            try ServeSettings.resolve(flags(), environment: ["OA_BRIDGE_PORT": "99999", "HOME": "/nonexistent"])
        }
        #expect(throws: ConfigError.badValue(key: "require-approval", value: "maybe", source: "OA_BRIDGE_REQUIRE_APPROVAL", expected: "true or false")) {
            try ServeSettings.resolve(flags(), environment: ["OA_BRIDGE_REQUIRE_APPROVAL": "maybe", "HOME": "/nonexistent"])
        }
        let text = ConfigError.badValue(key: "require-approval", value: "maybe", source: "OA_BRIDGE_REQUIRE_APPROVAL", expected: "true or false").description
        #expect(text.contains("require-approval") && text.contains("maybe") && text.contains("OA_BRIDGE_REQUIRE_APPROVAL") && text.contains("true or false"))
    }

    @Test("unknown keys in the config file are refused with the list of known keys")
    func unknownKey() throws {
        let path = try file("prot: 1\n")
        do {
            _ = try ServeSettings.resolve(flags(config: path), environment: ["HOME": "/nonexistent"])
            Issue.record("expected an error")
        } catch {
            guard case .unknownKey(_, let key, let known) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(key == "prot")
            #expect(known.contains("max-frame-size"))
            #expect(error.description.contains("unknown key 'prot'"))
        }
    }

    @Test("a file that is not a mapping, or maps agent-env to a scalar, is refused")
    func badShapes() throws {
        let list = try file("- port\n")
        #expect(throws: ConfigError.self) { try ServeSettings.resolve(flags(config: list), environment: [:]) }
        let env = try file("agent-env: x\n")
        #expect(throws: ConfigError.self) { try ServeSettings.resolve(flags(config: env), environment: [:]) }
    }

    @Test("--config must exist; the default location may be absent; XDG_CONFIG_HOME and OA_BRIDGE_CONFIG move it")
    func missingFile() throws {
        #expect(throws: ConfigError.missing("/nonexistent/c.yaml")) {
            try ServeSettings.resolve(flags(config: "/nonexistent/c.yaml"), environment: [:])
        }
        let settings = try ServeSettings.resolve(flags(), environment: ["HOME": "/nonexistent"])
        #expect(!settings.configExists)
        #expect(settings.configPath == "/nonexistent/.config/oa-bridge/config.yaml")
        #expect(ConfigFile.defaultPath(environment: ["XDG_CONFIG_HOME": "/x", "HOME": "/h"]) == "/x/oa-bridge/config.yaml")
        let path = try file("port: 9201\n")
        let fromVariable = try ServeSettings.resolve(flags(), environment: ["OA_BRIDGE_CONFIG": path, "HOME": "/nonexistent"])
        #expect(fromVariable.port.value == 9201 && fromVariable.port.source == path && fromVariable.configExists)
    }

    @Test("environment names are OA_BRIDGE_ and the option in upper snake case")
    func environmentNames() {
        #expect(ServeSettings.environmentName("max-frame-size") == "OA_BRIDGE_MAX_FRAME_SIZE")
        #expect(ServeSettings.environmentName("port") == "OA_BRIDGE_PORT")
    }

    @Test("config show's rows: one per known key but the file-only agent-env, which is listed too, in option order")
    func rows() throws {
        let settings = try ServeSettings.resolve(flags { $0.port = 9300 }, environment: ["HOME": "/nonexistent"])
        #expect(Set(settings.rows.map(\.key)) == ServeSettings.knownKeys)
        #expect(settings.rows.first?.key == "name")
        #expect(settings.rows.contains { $0.key == "port" && $0.value == "9300" && $0.source == "--port" })
    }
}

@Suite("JSON log lines", .tags(.unit))
struct JSONLogHandlerTests {
    @Test("one JSON object per line with ts, level, label, msg, source and the metadata")
    func line() throws {
        let lines = LineSink()
        var handler = JSONLogHandler(label: "oa-bridge.test") { lines.append($0) }
        handler[metadataKey: "fixed"] = "1"
        let logger = Logger(label: "oa-bridge.test") { _ in handler }
        logger.notice("hello", metadata: ["peer": "127.0.0.1"])
        logger.debug("not at info")
        let written = lines.all
        #expect(written.count == 1)
        let data = try #require(written.first)
        #expect(data.last == UInt8(ascii: "\n"))
        let object = try JSONDecoder().decode([String: String].self, from: data)
        #expect(object["msg"] == "hello" && object["level"] == "notice" && object["label"] == "oa-bridge.test")
        #expect(object["peer"] == "127.0.0.1" && object["fixed"] == "1" && object["ts"] != nil)
    }
}

/// Collects written lines across the handler's `@Sendable` closure.
final class LineSink: Sendable {
    private let lines = Mutex<[Data]>([])
    func append(_ data: Data) { lines.withLock { $0.append(data) } }
    var all: [Data] { lines.withLock { $0 } }
}

@Suite("agent command lines, the service options, the systemd unit", .tags(.unit))
struct ServeServiceTests {
    @Test("agent command lines split like a shell", arguments: [
        ("gemini --acp", ["gemini", "--acp"]),
        ("'my agent' --flag=\"a b\"", ["my agent", "--flag=a b"]),
        ("a\\ b c", ["a b", "c"]),
        ("  spaced   out  ", ["spaced", "out"]),
    ])
    func splitting(line: String, words: [String]) throws {
        #expect(try CommandLineSplitter.split(line) == words)
    }

    @Test("unterminated quotes are an error that names the agent command line (the command line adds --agent)")
    func badQuotes() {
        #expect(throws: ConfigError.agentCommand("unterminated single quote in 'open")) { try CommandLineSplitter.split("'open") }
        #expect(throws: ConfigError.agentCommand("unterminated double quote in \"open")) { try CommandLineSplitter.split("\"open") }
        #expect(ConfigError.agentCommand("x").description == "invalid agent command line: x")
    }

    @Test("the settings become the service's options: server settings, state directory, auth, no backend for off")
    func serviceOptions() throws {
        var flags = ServeFlags()
        flags.name = "Desk"
        flags.host = "127.0.0.1"
        flags.port = 9300
        flags.agent = "'my agent' --acp"
        flags.agentCwd = "/srv/agent"
        flags.workingDirectory = "/srv/work"
        flags.discovery = .off
        flags.stateDir = "/tmp/oa-state"
        flags.maxFrameSize = 4096
        flags.maxConnections = 7
        flags.maxPendingPerAddress = 3
        flags.requireApproval = true
        flags.allowNetwork = ["10.0.0.0/8"]
        flags.allowPlaintext = true
        let settings = try ServeSettings.resolve(flags, environment: ["HOME": "/nonexistent"])
        let options = try settings.serviceOptions(version: "9.9", logger: Logger(label: "test"))
        let configuration = options.configuration
        #expect(configuration.serverName == "Desk" && configuration.host == "127.0.0.1" && configuration.port == 9300)
        #expect(configuration.agentCommand == ["my agent", "--acp"] && configuration.agentWorkingDirectory == "/srv/agent")
        #expect(configuration.workingDirectory == "/srv/work" && configuration.maxFrameSize == 4096)
        #expect(configuration.maxConnections == 7 && configuration.maxPendingConnectionsPerAddress == 3)
        #expect(configuration.allowedNetworks == ["10.0.0.0/8"] && configuration.allowPlaintext)
        #expect(options.stateDirectory.path == "/tmp/oa-state")
        #expect(options.auth == .token(requireApproval: true))
        #expect(options.discovery == nil && options.version == "9.9")
        flags.auth = AuthMode.none
        flags.agent = "'open"
        #expect(throws: ConfigError.agentCommand("unterminated single quote in 'open")) {
            try ServeSettings.resolve(flags, environment: ["HOME": "/nonexistent"]).serviceOptions(version: "1", logger: Logger(label: "test"))
        }
        flags.agent = nil
        let open = try ServeSettings.resolve(flags, environment: ["HOME": "/nonexistent"]).serviceOptions(version: "1", logger: Logger(label: "test"))
        #expect(open.auth == .none && open.configuration.agentCommand == nil)
    }

    @Test("the systemd unit runs serve with the given options, quoted for systemd")
    func unit() {
        let unit = SystemdUnit.render(executable: "/usr/local/bin/oa-bridge", serveArguments: ["--name", "My Desk", "--agent", "x $HOME"])
        #expect(unit.contains(#"ExecStart=/usr/local/bin/oa-bridge serve --name "My Desk" --agent "x $$HOME""#))
        #expect(unit.contains("Restart=on-failure"))
        #expect(unit.contains("KillSignal=SIGTERM"))
        #expect(unit.contains("WantedBy=default.target"))
    }

    @Test("ExecStart's executable: a bare name started from $PATH is found there (was '/usr/bin/env oa-bridge', quoted as one word)")
    func executableFromPath() throws {
        let bin = NSTemporaryDirectory() + "oa-bin-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let program = bin + "/oa-bridge"
        FileManager.default.createFile(atPath: program, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
        let found = SystemdUnit.executable(argument0: "oa-bridge", currentDirectory: "/", searchPath: "relative:/nonexistent:\(bin)")
        #expect(found == program)
        #expect(SystemdUnit.render(executable: found, serveArguments: []).contains("ExecStart=\(program) serve\n"))
        #expect(SystemdUnit.executable(argument0: "oa-bridge", currentDirectory: "/", searchPath: "/nonexistent") == "oa-bridge")
        #expect(SystemdUnit.executable(argument0: "/usr/local/bin/../bin/oa-bridge", currentDirectory: "/", searchPath: nil) == "/usr/local/bin/oa-bridge")
        #expect(SystemdUnit.executable(argument0: ".build/debug/oa-bridge", currentDirectory: "/src", searchPath: nil) == "/src/.build/debug/oa-bridge")
    }

    @Test("the user unit goes under XDG_CONFIG_HOME (absolute only), else ~/.config")
    func unitPath() {
        #expect(SystemdUnit.userUnitPath(name: "oa-bridge", environment: ["XDG_CONFIG_HOME": "/x", "HOME": "/h"]) == "/x/systemd/user/oa-bridge.service")
        #expect(SystemdUnit.userUnitPath(name: "desk", environment: ["XDG_CONFIG_HOME": "rel", "HOME": "/h"]) == "/h/.config/systemd/user/desk.service")
    }

    @Test("systemd quoting: plain words as they are; blanks, quotes, backslashes, % and $ escaped", arguments: [
        ("plain", "plain"),
        ("", #""""#),
        ("a b", #""a b""#),
        (#"say "hi""#, #""say \"hi\"""#),
        (#"back\slash"#, #""back\\slash""#),
        ("100%", #""100%%""#),
    ])
    func quoting(word: String, quoted: String) {
        #expect(SystemdUnit.quote(word) == quoted)
    }
}
