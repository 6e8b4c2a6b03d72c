import BridgeRPC
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Serves `fs/read_text_file` and `fs/write_text_file` inside one directory: no `..` components,
/// and no symbolic link that leads outside (paths are resolved with realpath(3) before use).
struct WorkspaceFiles: Sendable {
    /// The directory, fully resolved.
    let root: String

    /// Files under `directory`, which must exist.
    init(root directory: String) throws(JSONRPCError) {
        guard let resolved = WorkspaceFiles.realPath(directory) else {
            throw JSONRPCError.invalidParams("the directory \(directory) does not exist", data: ["path": .string(directory)])
        }
        self.root = resolved
    }

    /// Whether `resolved` (already real) is the root or below it.
    func contains(_ resolved: String) -> Bool {
        resolved == root || resolved.hasPrefix(root == "/" ? "/" : root + "/")
    }

    /// The real path of `path` if it exists and is a directory inside the root.
    func directory(inside path: String) throws(JSONRPCError) -> String {
        let target = try confined(path, mustExist: true)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: target, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw JSONRPCError.invalidParams("\(path) is not a directory", data: ["path": .string(path)])
        }
        return target
    }

    /// Resolves `path` (absolute, or relative to the root) to a real path inside the root.
    /// When `mustExist` is false the file itself may be missing, but its nearest existing ancestor must be inside.
    func confined(_ path: String, mustExist: Bool) throws(JSONRPCError) -> String {
        let absolute = path.hasPrefix("/") ? path : root + "/" + path
        let components = absolute.split(separator: "/", omittingEmptySubsequences: true)
        if components.contains("..") {
            throw outside(path, why: "paths with .. are not allowed")
        }
        if let real = WorkspaceFiles.realPath(absolute) {
            guard contains(real) else { throw outside(path, why: "it resolves to \(real)") }
            return real
        }
        if mustExist {
            throw JSONRPCError(code: BridgeErrors.resourceNotFoundCode, message: "File not found: \(path)", data: ["path": .string(path)])
        }
        // A new file: the nearest existing ancestor decides.
        var ancestor = Array(components.dropLast())
        var missing = [components.last.map(String.init) ?? ""]
        while true {
            let candidate = "/" + ancestor.joined(separator: "/")
            if let real = WorkspaceFiles.realPath(candidate) {
                guard contains(real) else { throw outside(path, why: "its directory resolves to \(real)") }
                return ([real == "/" ? "" : real] + missing).joined(separator: "/")
            }
            guard let last = ancestor.popLast() else { throw outside(path, why: "no part of it exists") }
            missing.insert(String(last), at: 0)
        }
    }

    private func outside(_ path: String, why: String) -> JSONRPCError {
        JSONRPCError.invalidParams(
            "\(path) is outside the session's working directory \(root) (\(why))",
            data: ["path": .string(path), "root": .string(root)])
    }

    /// Reads a text file, optionally from 1-based `line` for `limit` lines.
    func read(_ path: String, line: Int?, limit: Int?) throws(JSONRPCError) -> String {
        let target = try confined(path, mustExist: true)
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: target))
        } catch {
            throw JSONRPCError.internalError("could not read \(path): \(error.localizedDescription)", data: ["path": .string(path)])
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw JSONRPCError.invalidParams("\(path) is not UTF-8 text", data: ["path": .string(path)])
        }
        guard line != nil || limit != nil else { return text }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let start = max((line ?? 1) - 1, 0)
        guard start < lines.count else { return "" }
        let end = limit.map { min(start + max($0, 0), lines.count) } ?? lines.count
        return lines[start..<end].joined(separator: "\n")
    }

    /// Writes a text file, creating missing directories inside the root.
    func write(_ path: String, content: String) throws(JSONRPCError) {
        let target = try confined(path, mustExist: false)
        let url = URL(fileURLWithPath: target)
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(content.utf8).write(to: url)
        } catch {
            throw JSONRPCError.internalError("could not write \(path): \(error.localizedDescription)", data: ["path": .string(path)])
        }
    }

    /// realpath(3), or `nil` if the path does not exist.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
