@testable import BridgeServer
import BridgeRPC
import Foundation
import Testing

@Suite("Files confined to a working directory", .tags(.unit))
struct WorkspaceFilesTests {
    @Test("reads and writes inside; .. and symlinks leading outside are refused")
    func confinement() throws {
        let root = try TestBridge.makeDirectory()
        let files = try WorkspaceFiles(root: root)
        try "one\ntwo\nthree\nfour".write(toFile: root + "/a.txt", atomically: true, encoding: .utf8)
        #expect(try files.read(root + "/a.txt", line: nil, limit: nil) == "one\ntwo\nthree\nfour")
        #expect(try files.read("a.txt", line: 2, limit: 2) == "two\nthree")
        #expect(try files.read("a.txt", line: 9, limit: nil) == "")

        #expect(throws: JSONRPCError.self) { try files.read(root + "/../etc/passwd", line: nil, limit: nil) }
        #expect(throws: JSONRPCError.self) { try files.read("/etc/passwd", line: nil, limit: nil) }
        try FileManager.default.createSymbolicLink(atPath: root + "/out", withDestinationPath: "/etc")
        #expect(throws: JSONRPCError.self) { try files.read(root + "/out/hostname", line: nil, limit: nil) }
        #expect(throws: JSONRPCError.self) { try files.write(root + "/out/evil.txt", content: "x") }
        #expect(!FileManager.default.fileExists(atPath: "/etc/evil.txt"))
        try FileManager.default.createSymbolicLink(atPath: root + "/inside", withDestinationPath: root + "/a.txt")
        #expect(try files.read(root + "/inside", line: 1, limit: 1) == "one")

        try files.write(root + "/new/dir/b.txt", content: "bee")
        #expect(try String(contentsOfFile: root + "/new/dir/b.txt", encoding: .utf8) == "bee")
        do {
            _ = try files.read(root + "/missing.txt", line: nil, limit: nil)
            Issue.record("missing file should fail")
        } catch {
            #expect(error.code == -32002)
        }
    }
}
