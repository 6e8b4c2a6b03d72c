import BridgeRPC
import Foundation

/// `bench parse [--count N]`: how long the relay's parse of one agent line takes (`JSONRPCFrame(parsingUTF8:)` of the
/// flood agent's `session/update`), in process: a microbenchmark for A/B of the parser, best of 5 rounds.
func runParse(_ args: Args) {
    let count = min(max(args.int("count", 200_000), 1), 5_000_000)
    let line = Array(#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"flood-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk 12345"}}}}"#.utf8)
    var best = Double.infinity
    var kept = 0
    for _ in 0..<5 {
        let start = ContinuousClock.now
        for _ in 0..<count {
            if case .single(.message(.notification(let notification))) = JSONRPCFrame(parsingUTF8: line) { kept &+= notification.method.utf8.count }
        }
        let elapsed = ContinuousClock.now - start
        best = min(best, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
    emit(["lines": count, "ns_per_line": best / Double(count) * 1e9, "check": kept])
}
