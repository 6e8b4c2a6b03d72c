import BridgeProcess
import Foundation

/// Runs `tailscale status --json` as a ``ChildProcess`` and collects its output on a SwiftNIO pipe channel, within a
/// time limit (the command is killed when the time is up).
struct TailscaleCommand: Sendable {
    /// The `tailscale` executable's path.
    let executable: String
    /// How long the command may take.
    let timeout: Duration

    /// The command's standard output; throws if it cannot run (the reason with its errno), fails without output, or
    /// takes too long.
    func statusJSON() async throws(TailscaleError) -> Data {
        let what = "'\(executable) status --json'"
        let executable = self.executable
        do {
            return try await TailscaleDeadline.run(within: timeout, what) {
                let completed = try await ChildProcess.run(
                    executable, ["status", "--json"], withErrors: false, limit: LocalAPIRequest.maxResponse + 1)
                guard completed.exit == .exited(0) || !completed.output.isEmpty else {
                    throw TailscaleError.unreachable("\(what) \(completed.exit)")
                }
                return Data(completed.output)
            }
        } catch let error as TailscaleError {
            throw error
        } catch let error as ChildProcessError {
            throw .unreachable("cannot run \(executable): \(error)")
        } catch {
            throw .unreachable("\(what): \(error)")
        }
    }
}
