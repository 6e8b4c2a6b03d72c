import BridgeSandbox
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("ProtectedFiles", .tags(.unit))
struct ProtectedFilesTests {
    @Test("a protected directory is found whatever the spelling: a symbolic link to it, a directory beneath it")
    func findsTheDirectoryWhateverTheSpelling() throws {
        let fixture = try SandboxFixture()
        try fixture.makeDirectory("state/sub")
        try fixture.makeDirectory("other")
        #expect(symlink(fixture.path("state"), fixture.path("other/alias")) == 0)
        let protected = try ProtectedFiles(directories: [fixture.path("state")], files: [])
        for spelling in ["state", "other/alias", "other/alias/sub", "other/../state/sub"] {
            let fd = open(fixture.path(spelling), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            defer { close(fd) }
            #expect(protected.enclosing(directory: fd) == fixture.path("state"), "\(spelling)")
        }
        let other = try fixture.openDirectory("other")
        defer { close(other) }
        #expect(protected.enclosing(directory: other) == nil)
    }

    @Test("a protected file is known by its inode: another hard link to it is the same file")
    func findsTheFileByInode() throws {
        let fixture = try SandboxFixture()
        try fixture.write("config.yaml", "auth: token\n")
        #expect(link(fixture.path("config.yaml"), fixture.path("copy.yaml")) == 0)
        try fixture.write("plain.yaml", "x\n")
        let protected = try ProtectedFiles(directories: [], files: [fixture.path("config.yaml")])
        let linked = open(fixture.path("copy.yaml"), O_RDONLY | O_CLOEXEC)
        defer { close(linked) }
        #expect(protected.protected(descriptor: linked) == fixture.path("config.yaml"))
        let plain = open(fixture.path("plain.yaml"), O_RDONLY | O_CLOEXEC)
        defer { close(plain) }
        #expect(protected.protected(descriptor: plain) == nil)
    }

    @Test("a missing directory to protect is made (mode 0700), so nobody else can make it first")
    func makesAMissingDirectory() throws {
        let fixture = try SandboxFixture()
        let protected = try ProtectedFiles(directories: [fixture.path("config/oa-bridge")], files: [])
        var info = stat()
        #expect(stat(fixture.path("config/oa-bridge"), &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        #expect(protected.ancestors().contains(try #require(FileIdentity(name: "config", in: open(fixture.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)))))
    }
}
