import BridgeClient
import BridgeTLS
import Foundation
import Logging

/// `connect --stdio`: the editor's messages from stdin to an ``ACPRelay``, its messages to stdout, what it reports to
/// stderr.
///
/// The relaying, reconnecting and resuming are the library's.
struct ConnectStdio {
    let candidates: [BridgeEndpoint]
    let options: BridgeSessionOptions
    let credential: @Sendable () async throws -> BridgeCredential?
    let refresh: (@Sendable () async throws -> BridgeCredential?)?
    let nothingFound: String
    let logger: Logger
    let remember: @Sendable (BridgeEndpoint, CertificatePin?) async -> Void

    func run() async {
        // Each bridge reached is saved by a task of this group, in the order reached; it ends when the relay has.
        let (reached, reaching) = AsyncStream.makeStream(of: (endpoint: BridgeEndpoint, pin: CertificatePin?).self)
        let relay = ACPRelay(
            candidates: candidates, options: options, credential: credential, refresh: refresh, logger: logger, noCandidates: nothingFound,
            output: { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) },
            onEvent: { event in
                if case .connected(let endpoint, let pin, _) = event { reaching.yield((endpoint, pin)) }
                ConnectStdio.report(event)
            })
        let remember = self.remember
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await bridge in reached { await remember(bridge.endpoint, bridge.pin) }
            }
            await relay.run(lines: ConnectStdio.standardInputLines())
            reaching.finish()
        }
    }

    /// Lines of stdin, read on a thread of their own (a blocking read must not hold a task's thread).
    static func standardInputLines() -> AsyncStream<String> {
        let (lines, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
        let reader = Thread {
            while let line = readLine(strippingNewline: true) {
                continuation.yield(line)
            }
            continuation.finish()
        }
        reader.start()
        return lines
    }

    static func report(_ event: ACPRelayEvent) {
        let line: String
        switch event {
        case .connected(let endpoint, _, let first):
            line = "\(first ? "connected" : "reconnected") to \(endpoint.url) via \(endpoint.source.rawValue)"
        case .lost(let reason):
            line = "the link to the bridge was lost (\(TerminalText.escapedLine(reason))); reconnecting"
        case .retrying(let reason, let delay, let attempt, let of):
            let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
            line = "reconnecting \(attempt)\(of.map { "/\($0)" } ?? "") in \(String(format: "%.1f", seconds)) s: \(TerminalText.escapedLine(reason))"
        case .resumed(let resumed, let reloaded):
            line = "resumed \(resumed) session(s)\(reloaded > 0 ? ", loaded \(reloaded) again (the bridge had forgotten them)" : "")"
        case .sessionLost(let sessionID, let reason):
            line = "session \(TerminalText.escapedLine(sessionID)) could not be attached again: \(TerminalText.escapedLine(reason))"
        case .gap(let sessionID, let detail):
            line = "session \(TerminalText.escapedLine(sessionID)): some updates missed while the link was down are gone: \(TerminalText.escapedLine(detail))"
        case .gaveUp(let reason):
            line = "gave up reaching the bridge (\(TerminalText.escapedLine(reason))); waiting requests were answered with an error, the next one tries again"
        }
        FileHandle.standardError.write(Data("oa-bridge connect: \(line)\n".utf8))
    }
}
