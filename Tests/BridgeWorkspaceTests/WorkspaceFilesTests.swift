import BridgeRPC
import BridgeTestKit
import CWorkspaceFS
import Foundation
import NIOPosix
import Testing
@testable import BridgeWorkspace

/// Both ways of opening: `openat2(2)` first (`true`), and the component walk a kernel without it gets (`false`).
private let confinements = [true, false]

@Suite("Files confined to a working directory", .tags(.unit))
struct WorkspaceFilesTests {
    /// A workspace and, beside it (outside), a directory holding `secret.txt`.
    private struct Fixture {
        let root: String
        let outside: String
        let files: WorkspaceFiles

        init(kernel: Bool) throws {
            let base = try TestDirectory.make()
            root = base + "/workspace"
            outside = base + "/outside"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
            try "outside secret".write(toFile: outside + "/secret.txt", atomically: true, encoding: .utf8)
            files = try WorkspaceFiles(root: root, kernelConfinement: kernel)
        }

        func link(_ name: String, to target: String) throws {
            try FileManager.default.createSymbolicLink(atPath: root + "/" + name, withDestinationPath: target)
        }

        func exists(_ path: String) -> Bool {
            var info = stat()
            return lstat(path, &info) == 0
        }

        /// What `body` threw, or `nil`.
        func refusal(_ body: () throws -> Void) -> WorkspaceFileError? {
            do {
                try body()
                return nil
            } catch let error as WorkspaceFileError {
                return error
            } catch {
                Issue.record("unexpected error \(error)")
                return nil
            }
        }
    }

    @Test("reads and writes inside; .. and symlinks leading outside are refused", arguments: confinements)
    func confinement(kernel: Bool) throws {
        let root = try TestDirectory.make()
        let files = try WorkspaceFiles(root: root, kernelConfinement: kernel)
        try "one\ntwo\nthree\nfour".write(toFile: root + "/a.txt", atomically: true, encoding: .utf8)
        #expect(try files.read(root + "/a.txt", line: nil, limit: nil) == "one\ntwo\nthree\nfour")
        #expect(try files.read("a.txt", line: 2, limit: 2) == "two\nthree")
        #expect(try files.read("a.txt", line: 9, limit: nil) == "")

        #expect(throws: WorkspaceFileError.parentComponent(path: root + "/../etc/passwd")) {
            try files.read(root + "/../etc/passwd", line: nil, limit: nil)
        }
        #expect(throws: WorkspaceFileError.self) { try files.read("/etc/passwd", line: nil, limit: nil) }
        // A directory of its own, not /etc: a broken build run as root must not write into the system.
        let outside = try TestDirectory.make()
        try "host".write(toFile: outside + "/hostname", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: root + "/out", withDestinationPath: outside)
        #expect(throws: WorkspaceFileError.self) { try files.read(root + "/out/hostname", line: nil, limit: nil) }
        #expect(throws: WorkspaceFileError.self) { try files.write(root + "/out/evil.txt", content: "x") }
        #expect(!FileManager.default.fileExists(atPath: outside + "/evil.txt"))
        try FileManager.default.createSymbolicLink(atPath: root + "/inside", withDestinationPath: root + "/a.txt")
        #expect(try files.read(root + "/inside", line: 1, limit: 1) == "one")

        try files.write(root + "/new/dir/b.txt", content: "bee")
        #expect(try String(contentsOfFile: root + "/new/dir/b.txt", encoding: .utf8) == "bee")
        #expect(throws: WorkspaceFileError.notFound(path: root + "/missing.txt")) {
            try files.read(root + "/missing.txt", line: nil, limit: nil)
        }
        #expect(WorkspaceFileError.notFound(path: "x").rpcError.code == -32002)
    }

    @Test("a write through a dangling symbolic link is refused and creates nothing", arguments: confinements)
    func danglingLink(kernel: Bool) throws {
        let fixture = try Fixture(kernel: kernel)
        try fixture.link("dangle", to: fixture.outside + "/created.txt")
        try fixture.link("dangle-in", to: "missing/inside.txt")
        try fixture.link("dangle-up", to: "../outside/created-too.txt")

        #expect(fixture.refusal { try fixture.files.write("dangle", content: "x") } != nil)
        #expect(fixture.refusal { try fixture.files.write(fixture.root + "/dangle-up", content: "x") } != nil)
        #expect(fixture.refusal { try fixture.files.write("dangle-in", content: "x") } == .danglingSymbolicLink(path: "dangle-in"))
        #expect(!fixture.exists(fixture.outside + "/created.txt"))
        #expect(!fixture.exists(fixture.outside + "/created-too.txt"))
        #expect(!fixture.exists(fixture.root + "/missing"))
        // The links are still links: nothing replaced them.
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: fixture.root + "/dangle")) == fixture.outside + "/created.txt")
    }

    @Test("links to outside are refused for reads, writes and a session's cwd", arguments: confinements)
    func linkToOutside(kernel: Bool) throws {
        let fixture = try Fixture(kernel: kernel)
        try fixture.link("abs", to: fixture.outside)
        try fixture.link("rel", to: "../outside")
        try fixture.link("file", to: fixture.outside + "/secret.txt")
        try FileManager.default.createDirectory(atPath: fixture.root + "/sub", withIntermediateDirectories: true)
        try fixture.link("sub/up", to: "../..")

        for path in ["abs/secret.txt", "rel/secret.txt", "file", "sub/up/outside/secret.txt"] {
            guard case .outside = fixture.refusal({ _ = try fixture.files.read(path, line: nil, limit: nil) }) else {
                Issue.record("reading \(path) was not refused as outside")
                continue
            }
        }
        for path in ["abs/new.txt", "rel/new.txt", "file", "sub/up/outside/new.txt", "abs/deep/new.txt"] {
            guard case .outside = fixture.refusal({ try fixture.files.write(path, content: "x") }) else {
                Issue.record("writing \(path) was not refused as outside")
                continue
            }
        }
        #expect(try String(contentsOfFile: fixture.outside + "/secret.txt", encoding: .utf8) == "outside secret")
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.outside) == ["secret.txt"])
        guard case .outside = fixture.refusal({ _ = try fixture.files.subdirectory("abs") }) else {
            Issue.record("a cwd through a link to outside was accepted")
            return
        }
    }

    @Test("a directory swapped for a link to outside is not followed, even after the session opened", arguments: confinements)
    func swappedDirectory(kernel: Bool) throws {
        let fixture = try Fixture(kernel: kernel)
        try FileManager.default.createDirectory(atPath: fixture.root + "/d", withIntermediateDirectories: true)
        try "inside secret".write(toFile: fixture.root + "/d/secret.txt", atomically: true, encoding: .utf8)
        #expect(try fixture.files.read("d/secret.txt", line: nil, limit: nil) == "inside secret")

        try FileManager.default.moveItem(atPath: fixture.root + "/d", toPath: fixture.root + "/d.old")
        try fixture.link("d", to: fixture.outside)
        guard case .outside = fixture.refusal({ _ = try fixture.files.read("d/secret.txt", line: nil, limit: nil) }) else {
            Issue.record("a read through the swapped directory was not refused")
            return
        }
        guard case .outside = fixture.refusal({ try fixture.files.write("d/secret.txt", content: "pwned") }) else {
            Issue.record("a write through the swapped directory was not refused")
            return
        }
        #expect(try String(contentsOfFile: fixture.outside + "/secret.txt", encoding: .utf8) == "outside secret")

        // The workspace itself renamed and replaced by a link: the session keeps its own directory.
        let session = try fixture.files.subdirectory("d.old")
        try FileManager.default.moveItem(atPath: fixture.root + "/d.old", toPath: fixture.root + "/d.moved")
        try fixture.link("d.old", to: fixture.outside)
        #expect(try session.read("secret.txt", line: nil, limit: nil) == "inside secret")
    }

    @Test("NUL, overlong paths and too many components are refused before any system call", arguments: confinements)
    func refusedPaths(kernel: Bool) throws {
        let fixture = try Fixture(kernel: kernel)
        try "a".write(toFile: fixture.root + "/a", atomically: true, encoding: .utf8)
        let nul = "a\u{0}.txt"
        #expect(fixture.refusal { _ = try fixture.files.read(nul, line: nil, limit: nil) } == .containsNUL(path: nul))
        #expect(fixture.refusal { try fixture.files.write(nul, content: "x") } == .containsNUL(path: nul))
        #expect(fixture.refusal { try fixture.files.write("new\u{0}/x", content: "x") } == .containsNUL(path: "new\u{0}/x"))
        #expect(try String(contentsOfFile: fixture.root + "/a", encoding: .utf8) == "a")
        #expect(!fixture.exists(fixture.root + "/new"))

        let long = String(repeating: "x", count: WorkspacePath.maxBytes + 1)
        #expect(fixture.refusal { try fixture.files.write(long, content: "x") }
            == .tooLong(path: long, bytes: WorkspacePath.maxBytes + 1, limit: WorkspacePath.maxBytes))
        let deep = Array(repeating: "d", count: WorkspacePath.maxComponents + 1).joined(separator: "/")
        #expect(fixture.refusal { try fixture.files.write(deep, content: "x") }
            == .tooManyComponents(path: deep, count: WorkspacePath.maxComponents + 1, limit: WorkspacePath.maxComponents))
        let levels20k = String(repeating: "d/", count: 20_000) + "f.txt"
        guard case .tooLong = fixture.refusal({ try fixture.files.write(levels20k, content: "x") }) else {
            Issue.record("a 20,000-level path was not refused as too long")
            return
        }
        #expect(!fixture.exists(fixture.root + "/d"))

        // At the limits it works.
        let deepest = Array(repeating: "d", count: WorkspacePath.maxComponents - 1).joined(separator: "/") + "/f.txt"
        try fixture.files.write(deepest, content: "deep")
        #expect(try fixture.files.read(deepest, line: nil, limit: nil) == "deep")

        let error = WorkspaceFileError.containsNUL(path: nul).rpcError
        #expect(error.code == JSONRPCError.invalidParamsCode)
        let tooLong = WorkspaceFileError.tooLong(path: long, bytes: long.utf8.count, limit: WorkspacePath.maxBytes).rpcError
        #expect(tooLong.code == JSONRPCError.invalidParamsCode)
        #expect((tooLong.data?["path"]?.stringValue?.utf8.count ?? 0) <= 256)
    }

    @Test("symbolic links that stay inside keep working", arguments: confinements)
    func linksInside(kernel: Bool) throws {
        let fixture = try Fixture(kernel: kernel)
        try FileManager.default.createDirectory(atPath: fixture.root + "/sub", withIntermediateDirectories: true)
        try "x".write(toFile: fixture.root + "/sub/x.txt", atomically: true, encoding: .utf8)
        try fixture.link("abs-file", to: fixture.root + "/sub/x.txt")
        try fixture.link("rel-file", to: "sub/x.txt")
        try fixture.link("dir", to: "sub")
        try fixture.link("abs-dir", to: fixture.root + "/sub")
        try fixture.link("sub/up", to: "..")
        try fixture.link("sub/chain", to: "../abs-file")

        for path in ["abs-file", "rel-file", "dir/x.txt", "abs-dir/x.txt", "sub/up/sub/x.txt", "sub/chain", fixture.root + "/dir/x.txt"] {
            #expect(try fixture.files.read(path, line: nil, limit: nil) == "x", "reading \(path)")
        }
        try fixture.files.write("dir/y.txt", content: "y")
        try fixture.files.write("abs-dir/new/z.txt", content: "z")
        try fixture.files.write("rel-file", content: "through the link")
        #expect(try String(contentsOfFile: fixture.root + "/sub/y.txt", encoding: .utf8) == "y")
        #expect(try String(contentsOfFile: fixture.root + "/sub/new/z.txt", encoding: .utf8) == "z")
        #expect(try String(contentsOfFile: fixture.root + "/sub/x.txt", encoding: .utf8) == "through the link")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: fixture.root + "/rel-file") == "sub/x.txt")

        let session = try fixture.files.subdirectory("dir")
        #expect(session.root == fixture.files.root + "/sub")
        #expect(try session.read("x.txt", line: nil, limit: nil) == "through the link")

        try fixture.link("loop", to: "loop")
        #expect(fixture.refusal { _ = try fixture.files.read("loop", line: nil, limit: nil) } == .tooManySymbolicLinks(path: "loop"))
    }

    @Test("a FIFO, a directory or a device is not a regular file, and opening it does not block", arguments: confinements)
    func notRegular(kernel: Bool) throws {
        let fixture = try Fixture(kernel: kernel)
        #expect(mkfifo(fixture.root + "/fifo", 0o600) == 0)
        try FileManager.default.createDirectory(atPath: fixture.root + "/dir", withIntermediateDirectories: true)
        try fixture.link("null", to: "/dev/null")
        #expect(fixture.refusal { _ = try fixture.files.read("fifo", line: nil, limit: nil) } == .notARegularFile(path: "fifo"))
        #expect(fixture.refusal { try fixture.files.write("fifo", content: "x") } == .notARegularFile(path: "fifo"))
        #expect(fixture.refusal { _ = try fixture.files.read("dir", line: nil, limit: nil) } == .notARegularFile(path: "dir"))
        #expect(fixture.refusal { try fixture.files.write("dir", content: "x") } == .notARegularFile(path: "dir"))
        guard case .outside = fixture.refusal({ _ = try fixture.files.read("null", line: nil, limit: nil) }) else {
            Issue.record("a link to /dev/null was followed")
            return
        }
    }

    @Test("this kernel has openat2 and refuses an escape itself (EXDEV), so the kernel path is the one that runs")
    func kernelRefuses() throws {
        let fixture = try Fixture(kernel: true)
        try fixture.link("abs", to: fixture.outside)
        let fd = cwfs_openat2(fixture.files.resolver.directory.descriptor, "abs/secret.txt", UInt64(O_RDONLY | O_CLOEXEC), 0, cwfs_resolve_beneath)
        let code = errno
        if fd >= 0 { close(fd) }
        #expect(fd == -1 && code == EXDEV, "openat2 answered \(fd), errno \(code)")
        let escape = cwfs_openat2(fixture.files.resolver.directory.descriptor, "../outside/secret.txt", UInt64(O_RDONLY | O_CLOEXEC), 0, cwfs_resolve_beneath)
        #expect(escape == -1 && errno == EXDEV)
        let inside = cwfs_openat2(fixture.files.resolver.directory.descriptor, ".", UInt64(O_RDONLY | O_DIRECTORY | O_CLOEXEC), 0, cwfs_resolve_beneath)
        #expect(inside >= 0)
        if inside >= 0 { close(inside) }
    }

    @Test("a file call past its time limit is answered at once and abandoned; cancellation answers too")
    func timeLimit() async throws {
        let clock = ManualClock()
        // A pool of its own: the jobs below spin until abandoned, and on the shared singleton pool (two threads) they
        // waited behind, and held up, every other test's file calls in full runs (waitForSleepers failed after 10 s).
        let pool = NIOThreadPool(numberOfThreads: 2)
        pool.start()
        let io = WorkspaceIO(pool: pool, limit: .seconds(10), clock: clock)
        // The jobs stand for long file calls: each holds its pool thread until the test opens its gate (after its
        // caller was answered), then tells whether it was told it is abandoned, the step a real call looks at.
        let seen = ObservedList<Bool>()
        let slowGate = ThreadGate()
        let slow = Task {
            await io.run(path: "slow.txt") { isAbandoned throws(WorkspaceFileError) -> Int in
                seen.append(isAbandoned())
                _ = slowGate.wait()
                seen.append(isAbandoned())
                throw .abandoned(path: "slow.txt")
            }
        }
        #expect(await clock.waitForSleepers(1))
        #expect(await seen.wait { !$0.isEmpty }, "the job runs on the pool")
        clock.advance(by: .seconds(9))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        #expect(await slow.value == .failure(.timedOut(path: "slow.txt", limit: .seconds(10))))
        slowGate.open()
        // The job on the pool was not abandoned while its caller waited, and is once its caller was answered.
        #expect(await seen.wait { $0.count == 2 })
        #expect(seen.all == [false, true])

        let stuckGate = ThreadGate()
        let stuck = ObservedList<Bool>()
        let cancelled = Task {
            await io.run(path: "stuck.txt") { isAbandoned throws(WorkspaceFileError) -> Int in
                _ = stuckGate.wait()
                stuck.append(isAbandoned())
                return 1
            }
        }
        #expect(await clock.waitForSleepers(1))
        cancelled.cancel()
        #expect(await cancelled.value == .failure(.abandoned(path: "stuck.txt")))
        stuckGate.open()
        #expect(await stuck.wait { !$0.isEmpty })
        #expect(stuck.all == [true], "a cancelled call is abandoned")

        let quick = await io.run(path: "quick.txt") { _ throws(WorkspaceFileError) -> Int in 42 }
        #expect(quick == .success(42))
        try await pool.shutdownGracefully()
    }
}
