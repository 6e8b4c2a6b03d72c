import BridgeRPC
import Foundation
import Testing
@testable import BridgeWorkspace

/// Both ways of opening: `openat2(2)` first (`true`), and the component walk a kernel without it gets (`false`).
private let confinements = [true, false]

@Suite("--fs-scope: how far file requests reach", .tags(.unit))
struct WorkspaceScopeTests {
    /// `base/home/workspace` (the session's directory) inside a stand-in home directory, `base/home/logs/run.log`
    /// beside the workspace in that home, and `base/elsewhere/secret.txt` outside the home.
    private struct Fixture {
        let home: String
        let workspace: String
        let elsewhere: String

        init() throws {
            let base = URL(fileURLWithPath: try TestDirectory.make()).resolvingSymlinksInPath().path
            home = base + "/home"
            workspace = home + "/workspace"
            elsewhere = base + "/elsewhere"
            for directory in [workspace, home + "/logs", elsewhere] {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            }
            try "a log line".write(toFile: home + "/logs/run.log", atomically: true, encoding: .utf8)
            try "elsewhere secret".write(toFile: elsewhere + "/secret.txt", atomically: true, encoding: .utf8)
        }

        func files(_ scope: WorkspaceScope, kernel: Bool) throws -> WorkspaceFiles {
            try WorkspaceFiles(root: workspace, scope: scope, home: home, kernelConfinement: kernel)
        }

        func read(_ files: WorkspaceFiles, _ path: String) -> Result<String, WorkspaceFileError> {
            Result { () throws(WorkspaceFileError) in try files.read(path, line: nil, limit: nil) }
        }

        func write(_ files: WorkspaceFiles, _ path: String) -> Result<Void, WorkspaceFileError> {
            Result { () throws(WorkspaceFileError) in try files.write(path, content: "written") }
        }
    }

    private static func isOutside<T>(_ result: Result<T, WorkspaceFileError>) -> Bool {
        if case .failure(.outside) = result { return true }
        return false
    }

    @Test("workspace (the default): a file outside the session's directory is refused, to read and to write", arguments: confinements)
    func workspaceRefusesOutside(kernel: Bool) throws {
        let fixture = try Fixture()
        let files = try fixture.files(.workspace, kernel: kernel)
        #expect(Self.isOutside(fixture.read(files, fixture.home + "/logs/run.log")))
        #expect(Self.isOutside(fixture.write(files, fixture.home + "/logs/new.txt")))
        #expect(!FileManager.default.fileExists(atPath: fixture.home + "/logs/new.txt"))
        // The default of the initializer is the workspace (the configuration's: BridgeServerTests' FileScopeServerTests).
        let unscoped = try WorkspaceFiles(root: fixture.workspace, kernelConfinement: kernel)
        #expect(Self.isOutside(fixture.read(unscoped, fixture.home + "/logs/run.log")))
    }

    @Test("home: anything under the home directory, nothing beyond it, not even through a link", arguments: confinements)
    func homeScope(kernel: Bool) throws {
        let fixture = try Fixture()
        let files = try fixture.files(.home, kernel: kernel)
        #expect(try fixture.read(files, fixture.home + "/logs/run.log").get() == "a log line")
        try fixture.write(files, fixture.home + "/logs/deeper/new.txt").get()
        #expect(try String(contentsOfFile: fixture.home + "/logs/deeper/new.txt", encoding: .utf8) == "written")
        // A link in the workspace into the home is followed; the workspace itself is still served.
        try FileManager.default.createSymbolicLink(atPath: fixture.workspace + "/logs", withDestinationPath: fixture.home + "/logs")
        #expect(try fixture.read(files, fixture.workspace + "/logs/run.log").get() == "a log line")

        #expect(Self.isOutside(fixture.read(files, fixture.elsewhere + "/secret.txt")))
        #expect(Self.isOutside(fixture.write(files, fixture.elsewhere + "/new.txt")))
        // Links leading out of the home: absolute, relative, from the workspace and from the home.
        try FileManager.default.createSymbolicLink(atPath: fixture.home + "/away", withDestinationPath: fixture.elsewhere)
        try FileManager.default.createSymbolicLink(atPath: fixture.workspace + "/up", withDestinationPath: "../../elsewhere")
        for path in [fixture.home + "/away/secret.txt", fixture.workspace + "/up/secret.txt"] {
            #expect(Self.isOutside(fixture.read(files, path)), "\(path)")
            #expect(Self.isOutside(fixture.write(files, path)), "\(path)")
        }
        #expect(try String(contentsOfFile: fixture.elsewhere + "/secret.txt", encoding: .utf8) == "elsewhere secret")
        #expect(!FileManager.default.fileExists(atPath: fixture.elsewhere + "/new.txt"))
        // Paths must be absolute outside the workspace, and `..` is refused whatever the scope.
        #expect(Self.isOutside(fixture.read(files, "up/secret.txt")))
        #expect(fixture.read(files, fixture.workspace + "/../logs/run.log") == .failure(.parentComponent(path: fixture.workspace + "/../logs/run.log")))
    }

    @Test("any: any absolute path; .. still refused", arguments: confinements)
    func anyScope(kernel: Bool) throws {
        let fixture = try Fixture()
        let files = try fixture.files(.any, kernel: kernel)
        #expect(try fixture.read(files, fixture.elsewhere + "/secret.txt").get() == "elsewhere secret")
        try FileManager.default.createSymbolicLink(atPath: fixture.workspace + "/up", withDestinationPath: "../../elsewhere")
        #expect(try fixture.read(files, fixture.workspace + "/up/secret.txt").get() == "elsewhere secret")
        try fixture.write(files, fixture.elsewhere + "/new.txt").get()
        #expect(try String(contentsOfFile: fixture.elsewhere + "/new.txt", encoding: .utf8) == "written")
        #expect(fixture.read(files, fixture.elsewhere + "/../elsewhere/secret.txt")
            == .failure(.parentComponent(path: fixture.elsewhere + "/../elsewhere/secret.txt")))
    }

    @Test("a session's workspace and a terminal's directory keep the scope", arguments: confinements)
    func scopeIsKept(kernel: Bool) throws {
        let fixture = try Fixture()
        try FileManager.default.createDirectory(atPath: fixture.workspace + "/app", withIntermediateDirectories: true)
        let session = try fixture.files(.home, kernel: kernel).subdirectory(fixture.workspace + "/app")
        #expect(try fixture.read(session, fixture.home + "/logs/run.log").get() == "a log line")
        let logs = try session.directory(fixture.home + "/logs")
        #expect(logs.root == fixture.home + "/logs")
        #expect(Result { () throws(WorkspaceFileError) in try session.directory(fixture.elsewhere) }.isOutside)
        let confined = try fixture.files(.workspace, kernel: kernel).subdirectory("app")
        #expect(Result { () throws(WorkspaceFileError) in try confined.directory(fixture.home + "/logs") }.isOutside)
        #expect(try confined.directory("").root == fixture.workspace + "/app")
    }

    @Test("home without a home directory that opens is an error that names the scope")
    func missingHome() throws {
        let fixture = try Fixture()
        #expect(throws: WorkspaceFileError.missingScopeDirectory(scope: .home, directory: fixture.home + "/missing")) {
            try WorkspaceFiles(root: fixture.workspace, scope: .home, home: fixture.home + "/missing")
        }
    }

    @Test("--fs-scope parses its three words")
    func words() {
        #expect(WorkspaceScope.allCases.map(\.rawValue) == ["workspace", "home", "any"])
        #expect(WorkspaceScope(rawValue: "everything") == nil)
    }
}

extension Result where Failure == WorkspaceFileError {
    fileprivate var isOutside: Bool {
        if case .failure(.outside) = self { return true }
        return false
    }
}
