import CSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A Landlock ruleset made from a ``SandboxPolicy``, ready for a confined `ChildProcess` (BridgeProcess): its descriptor (held
/// until this is released).
///
/// Landlock only adds permissions: a rule on a directory covers everything beneath it. So a directory with a
/// protected file or directory somewhere beneath it (see ``ProtectedFiles/ancestors()``) gets no rule of its own
/// beyond listing (`READ_DIR`): each of its entries gets the rule instead, except the protected one, down the path to
/// it. Below such a directory nothing new can be made next to the entries (no `MAKE_*` on it): with a state directory
/// under the home directory and `--fs-scope home`, a terminal writes in `~/project` but makes no new file in `~`
/// itself. Symbolic links get no rule (their targets have their own). Signals to processes outside the sandbox
/// (the bridge) are refused from ABI 6.
public final class LandlockRuleset: Sendable {
    /// The ruleset's descriptor (close-on-exec).
    public let descriptor: Int32
    /// The ABI it was made for.
    public let abi: Int
    /// How many rules it holds.
    public let ruleCount: Int

    private init(descriptor: Int32, abi: Int, ruleCount: Int) {
        self.descriptor = descriptor
        self.abi = abi
        self.ruleCount = ruleCount
    }

    deinit {
        close(descriptor)
    }

    /// Builds the ruleset for `policy` on the kernel's Landlock ABI.
    /// - Throws: ``SandboxError/landlockUnavailable(errno:)`` without Landlock, ``SandboxError/landlockTooOld(abi:minimum:)``
    ///   under an ABI older than ``Landlock/minimumABI``, ``SandboxError/unreadable(path:errno:)``
    ///   when a descriptor of the policy is bad, ``SandboxError/landlock(operation:path:errno:)`` when the kernel
    ///   refuses a rule.
    public static func build(_ policy: SandboxPolicy) throws(SandboxError) -> LandlockRuleset {
        let abi = try Landlock.usableABI().get()
        let handled = Landlock.Access.handled(abi: abi)
        let scoped: UInt64 = abi >= 6 ? UInt64(CSB_SCOPE_SIGNAL) : 0
        let fd = csb_landlock_create_ruleset(handled.rawValue, scoped, Int32(abi))
        guard fd >= 0 else { throw .landlock(operation: "create_ruleset", path: "-", errno: errno) }
        var builder = Builder(ruleset: fd, handled: handled, protected: policy.protected, ancestors: policy.protected.ancestors())
        do throws(SandboxError) {
            for (roots, access) in [(policy.readable, Landlock.Access.read), (policy.devices, .device), (policy.writable, .readWrite)] {
                for root in roots { try builder.allow(root, access) }
            }
        } catch {
            close(fd)
            throw error
        }
        return LandlockRuleset(descriptor: fd, abi: abi, ruleCount: builder.rules)
    }

    private struct Builder {
        let ruleset: Int32
        let handled: Landlock.Access
        let protected: ProtectedFiles
        let ancestors: Set<FileIdentity>
        var rules = 0

        mutating func allow(_ root: SandboxPolicy.Root, _ access: Landlock.Access) throws(SandboxError) {
            switch root {
            case .descriptor(let fd, let name):
                guard let identity = FileIdentity(descriptor: fd) else { throw .unreadable(path: name, errno: errno) }
                try allow(fd, identity: identity, access, name: name, depth: 0)
            case .path(let path):
                let fd = open(path, oPath | O_CLOEXEC)
                guard fd >= 0 else {
                    if errno == ENOENT || errno == ENOTDIR || errno == EACCES { return }  // not on this system
                    throw .unreadable(path: path, errno: errno)
                }
                defer { close(fd) }
                guard let identity = FileIdentity(descriptor: fd) else { throw .unreadable(path: path, errno: errno) }
                try allow(fd, identity: identity, access, name: path, depth: 0)
            }
        }

        /// A rule for `fd` (whose identity is `identity`), or, when something protected lies beneath it, rules for its
        /// entries (see the type's documentation).
        mutating func allow(_ fd: Int32, identity: FileIdentity, _ access: Landlock.Access, name: String, depth: Int) throws(SandboxError) {
            if protected.protected(identity) != nil { return }
            guard identity.isDirectory else {
                try add(fd, access.intersection(.fileRights), name: name)
                return
            }
            guard ancestors.contains(identity), depth < 64 else {
                try add(fd, access, name: name)
                return
            }
            if access.contains(.readDir) { try add(fd, .readDir, name: name) }
            let listing = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard listing >= 0, let directory = fdopendir(listing) else {
                let code = errno
                if listing >= 0 { close(listing) }
                throw .unreadable(path: name, errno: code)
            }
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                let child = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if child == "." || child == ".." { continue }
                let childFD = csb_open_path(fd, child)
                guard childFD >= 0 else { continue }  // gone meanwhile
                defer { close(childFD) }
                var info = stat()
                guard fstat(childFD, &info) == 0, info.st_mode & S_IFMT != S_IFLNK else { continue }
                try allow(childFD, identity: FileIdentity(info), access, name: name + "/" + child, depth: depth + 1)
            }
        }

        mutating func add(_ fd: Int32, _ access: Landlock.Access, name: String) throws(SandboxError) {
            let granted = access.intersection(handled)
            guard !granted.isEmpty else { return }
            guard csb_landlock_allow(ruleset, fd, granted.rawValue) == 0 else {
                throw .landlock(operation: "add_rule", path: name, errno: errno)
            }
            rules += 1
        }
    }
}
