import BridgePairing
import Foundation

/// The stable id of this installation, published in TXT (`id=`) so phones recognise the desktop
/// across renames and address changes. Kept in `<state dir>/install-id`.
enum InstallIdentity {
    /// Reads the id, creating it on first use.
    static func load(stateDirectory: URL) throws -> String {
        let file = stateDirectory.appendingPathComponent("install-id")
        if let text = try? String(contentsOf: file, encoding: .utf8) {
            let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if UUID(uuidString: id) != nil { return id.lowercased() }
        }
        try StateDirectory.prepare(stateDirectory)
        let id = UUID().uuidString.lowercased()
        do {
            try Data((id + "\n").utf8).write(to: file, options: .atomic)
        } catch {
            throw ServeError.stateDirectory(path: stateDirectory.path, reason: error.localizedDescription)
        }
        return id
    }
}
