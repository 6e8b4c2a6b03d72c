import BridgePairing
public import Foundation

/// The stable id of this installation, published in TXT (`id=`) so phones recognise the desktop
/// across renames and address changes.
///
/// Kept in `<state dir>/install-id`.
public enum InstallIdentity {
    /// Reads the id (a lowercase UUID), creating it on first use.
    /// - Throws: ``InstallIdentityError`` when the state directory cannot be made or written.
    public static func load(stateDirectory: URL) throws(InstallIdentityError) -> String {
        let file = stateDirectory.appendingPathComponent("install-id")
        if let text = try? String(contentsOf: file, encoding: .utf8) {
            let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if UUID(uuidString: id) != nil { return id.lowercased() }
        }
        do {
            try StateDirectory.prepare(stateDirectory)
        } catch {
            throw .unusableStateDirectory(path: stateDirectory.path, reason: error.message)
        }
        let id = UUID().uuidString.lowercased()
        do {
            try Data((id + "\n").utf8).write(to: file, options: .atomic)
        } catch {
            throw .unusableStateDirectory(path: stateDirectory.path, reason: error.localizedDescription)
        }
        return id
    }
}
