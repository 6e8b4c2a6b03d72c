import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import BridgeServer

/// A default actor: it runs wherever the calling task's executor preference says, when it is free.
private actor Probe {
    /// Whether the actor ran this call on `loop`'s thread.
    func onLoop(_ loop: any EventLoop) -> Bool {
        loop.inEventLoop
    }
}

/// A connection's task prefers its channel's event loop (issue 14 goal 1): these check that it really runs there,
/// after suspensions and inside a free default actor like the hub, and that an explicit preference moves work off it.
@Suite(.tags(.unit)) struct EventLoopTaskExecutorTests {
    @Test func taskRunsOnItsLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        for loop in [group.next(), group.next()] {
            let seen = await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) { () async -> [Bool] in
                var seen = [loop.inEventLoop]
                await Task.yield()
                seen.append(loop.inEventLoop)
                // Resumed from another thread: the continuation's job comes back through the loop.
                let value = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
                    Thread.detachNewThread { continuation.resume(returning: 7) }
                }
                seen.append(value == 7 && loop.inEventLoop)
                return seen
            }
            #expect(seen == [true, true, true])
        }
        try await group.shutdownGracefully()
    }

    @Test func freeDefaultActorRunsOnTheLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let probe = Probe()
        let results = await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) {
            var results: [Bool] = []
            for _ in 0..<3 { results.append(await probe.onLoop(loop)) }
            return results
        }
        #expect(results == [true, true, true])
        // Without the preference the same actor runs on the global executor.
        #expect(await probe.onLoop(loop) == false)
        try await group.shutdownGracefully()
    }

    @Test func childWithGlobalPreferenceLeavesTheLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let (parent, child) = await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) { () async -> (Bool, Bool) in
            let child = await withTaskGroup(of: Bool.self) { tasks in
                tasks.addTask(executorPreference: globalConcurrentExecutor) { loop.inEventLoop }
                return await tasks.next() ?? true
            }
            return (loop.inEventLoop, child)
        }
        #expect(parent)
        #expect(!child)
        try await group.shutdownGracefully()
    }
}
