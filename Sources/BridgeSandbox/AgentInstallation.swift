import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The directories an agent's own installation lives in, which a sandboxed agent must read (and execute) beyond the
/// system's directories: its program, the interpreter its `#!` line names (through `/usr/bin/env` too), the scripts
/// its command line names, each as given and with its symbolic links resolved (`~/.local/bin/x` → a pipx or uv venv).
///
/// A program in a `bin` directory brings its prefix (`.venv/bin/python` → `.venv`: the venv's `lib`, `pyvenv.cfg`;
/// `~/.nvm/versions/node/v22/bin/node` → that Node's `lib/node_modules`); any other file brings its directory. The home
/// directory, `~/.local` and `/` are never granted whole (a program in `~/bin` or `~/.local/bin` brings that `bin` and
/// the prefix's `lib` only; a script straight in the home directory brings the script alone).
public enum AgentInstallation {
    /// The files and directories to read for the agent `executable` (an absolute path) run with `arguments` in
    /// `workingDirectory`, with `environment`'s `PATH` and `HOME`; deduplicated, in a stable order.
    public static func paths(
        executable: String, arguments: [String], workingDirectory: String?, environment: [String: String]
    ) -> [String] {
        let home = environment["HOME"].map(resolved)
        var found: [String] = []
        func add(_ path: String) {
            if !found.contains(path) { found.append(path) }
        }
        var programs = [executable]
        if let interpreter = interpreter(of: executable, path: environment["PATH"] ?? "/usr/bin:/bin") {
            programs.append(interpreter)
            // One more level: a script run by a wrapper that is itself a script.
            if let next = self.interpreter(of: interpreter, path: environment["PATH"] ?? "/usr/bin:/bin") { programs.append(next) }
        }
        // Script files the command line names (`python3 agent.py`, `node dist/index.js`).
        for argument in arguments where !argument.hasPrefix("-") {
            let path = argument.hasPrefix("/") ? argument : ((workingDirectory ?? FileManager.default.currentDirectoryPath) + "/" + argument)
            var info = stat()
            if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG { programs.append(path) }
        }
        for program in programs {
            for spelling in [program, resolved(program)] {
                for path in grant(for: spelling, home: home) { add(path) }
            }
        }
        return found
    }

    /// What one program's file brings (see the type's documentation).
    static func grant(for file: String, home: String?) -> [String] {
        let directory = parent(of: file)
        let broad = { (path: String) -> Bool in
            path == "/" || path == home || (home.map { $0.hasPrefix(path + "/") } ?? false) || path == home.map { $0 + "/.local" }
        }
        if (directory as NSString).lastPathComponent == "bin" {
            let prefix = parent(of: directory)
            if !broad(prefix) { return [prefix] }
            return broad(directory) ? [file] : [directory, (prefix == "/" ? "" : prefix) + "/lib"]
        }
        return broad(directory) ? [file] : [directory]
    }

    /// The interpreter a `#!` line of `file` names (`/usr/bin/env node` → `node` found on `path`), if any.
    static func interpreter(of file: String, path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: file) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 256), head.starts(with: Array("#!".utf8)) else { return nil }
        let line = String(decoding: head.dropFirst(2).prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let first = words.first else { return nil }
        guard (first as NSString).lastPathComponent == "env" else { return first }
        guard let name = words.dropFirst().first(where: { !$0.hasPrefix("-") && !$0.contains("=") }) else { return nil }
        if name.hasPrefix("/") { return name }
        for directory in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
            return "\(directory)/\(name)"
        }
        return nil
    }

    static func resolved(_ path: String) -> String {
        guard let real = realpath(path, nil) else { return path }
        defer { free(real) }
        return String(cString: real)
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
