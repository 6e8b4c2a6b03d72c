import BridgeTestKit
import NIOCore
import NIOPosix
import Testing

/// The "closed port" the tests use (issue 31 item 3): refused to connects, and nobody can take it while it is held.
@Suite("A reserved closed port", .tags(.loopback))
struct ReservedPortTests {
    @Test("while held, a connect is refused and a server cannot bind it (not even with SO_REUSEADDR, as NIO binds)")
    func heldPortIsRefusedAndCannotBeTaken() async throws {
        let reserved = try ReservedPort()
        defer { withExtendedLifetime(reserved) {} }
        await #expect(throws: (any Error).self) {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bind(host: "127.0.0.1", port: reserved.port).get()
            try await channel.close()
        }
        let refused = await #expect(throws: NIOConnectionError.self) {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: reserved.port).get()
            try await channel.close()
        }
        let cause = refused?.connectionErrors.first?.error as? IOError
        #expect(cause?.errnoCode == ECONNREFUSED)
    }
}
