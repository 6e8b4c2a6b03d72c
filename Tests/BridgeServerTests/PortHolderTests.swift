import BridgeServer
import Foundation
import Testing

/// Issue 25 item 1: a taken port names what holds it, read from /proc.
@Suite("The holder of a taken port", .tags(.unit))
struct PortHolderTests {
    /// A /proc tree with one listening socket on `port` (inode 4242) held by pid 77, and a connected socket on it.
    private func fakeProc(port: Int, cmdline: [String], cgroup: String) throws -> URL {
        let proc = FileManager.default.temporaryDirectory.appendingPathComponent("proc-\(UUID().uuidString)")
        let fm = FileManager.default
        try fm.createDirectory(at: proc.appendingPathComponent("net"), withIntermediateDirectories: true)
        let header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        let hex = String(format: "%04X", port)
        // An established connection from the port (state 01) must not count; the listener (0A) does.
        let tcp = header
            + "   0: 0100007F:\(hex) 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 999 1 0\n"
            + "   1: 00000000:\(hex) 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0\n"
        try tcp.write(to: proc.appendingPathComponent("net/tcp"), atomically: true, encoding: .utf8)
        try header.write(to: proc.appendingPathComponent("net/tcp6"), atomically: true, encoding: .utf8)
        for (pid, inode) in [(12, 999), (77, 4242)] {
            let fd = proc.appendingPathComponent("\(pid)/fd")
            try fm.createDirectory(at: fd, withIntermediateDirectories: true)
            try fm.createSymbolicLink(atPath: fd.appendingPathComponent("3").path, withDestinationPath: "socket:[\(inode)]")
            try fm.createSymbolicLink(atPath: fd.appendingPathComponent("0").path, withDestinationPath: "/dev/null")
        }
        try Data((cmdline.joined(separator: "\0") + "\0").utf8).write(to: proc.appendingPathComponent("77/cmdline"))
        try cgroup.write(to: proc.appendingPathComponent("77/cgroup"), atomically: true, encoding: .utf8)
        return proc
    }

    @Test("another oa-bridge under systemd is named, with its unit and what to do")
    func anotherBridge() throws {
        let proc = try fakeProc(port: 9099, cmdline: ["/usr/local/bin/oa-bridge", "serve"], cgroup: "0::/system.slice/oa-bridge.service\n")
        defer { try? FileManager.default.removeItem(at: proc) }
        let holder = try #require(PortHolder.listening(on: 9099, proc: proc))
        #expect(holder == PortHolder(pid: 77, command: "/usr/local/bin/oa-bridge serve", systemdUnit: "oa-bridge.service"))
        #expect(holder.isBridge)
        let message = BridgeServerError.portInUse(host: "::", port: 9099, holder: holder).description
        #expect(message.contains("another oa-bridge"))
        #expect(message.contains("pid 77"))
        #expect(message.contains("systemctl stop oa-bridge.service"))
        #expect(message.contains("oa-bridge pair"))
    }

    @Test("another program is named; a user session's manager is not taken for a unit; other ports find nothing")
    func otherProgram() throws {
        let proc = try fakeProc(
            port: 8080, cmdline: ["python3", "-m", "http.server", "8080"],
            cgroup: "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-term.scope\n")
        defer { try? FileManager.default.removeItem(at: proc) }
        let holder = try #require(PortHolder.listening(on: 8080, proc: proc))
        #expect(holder.command == "python3 -m http.server 8080")
        #expect(holder.systemdUnit == nil)
        #expect(!holder.isBridge)
        #expect(BridgeServerError.portInUse(host: "::", port: 8080, holder: holder).description.contains("python3 -m http.server 8080 (pid 77)"))
        #expect(PortHolder.listening(on: 8081, proc: proc) == nil)
    }
}
