import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bridge's ends of an agent's stdin, stdout and stderr, as NIO channels: the agent's output is cut into
/// ``AgentLine``s on the event loop (the lines of one read come as one element), its input takes bytes.
struct StdioAgentPipes: Sendable {
    /// Writes to the agent's stdin.
    let stdin: NIOAsyncChannel<Never, ByteBuffer>
    /// The agent's stdout, the lines of each read together, in order.
    let stdout: NIOAsyncChannel<[AgentLine], Never>
    /// The agent's stderr, the lines of each read together, in order.
    let stderr: NIOAsyncChannel<[AgentLine], Never>

    /// Reads (each up to the read allocator's maximum, a pipe's 64 KiB in practice) buffered ahead of the reader
    /// before NIO stops reading the pipe, and where it starts again.
    private static let backPressure = NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark(lowWatermark: 2, highWatermark: 16)

    /// Wraps the bridge's ends of three pipes, taking ownership of the descriptors (closed with the channels, or here
    /// if wrapping fails).
    static func wrap(stdin: CInt, stdout: CInt, stderr: CInt, maxLineLength: Int) async throws -> StdioAgentPipes {
        let bootstrap = NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            // Big reads: the agent's output is the relay's hot path.
            .channelOption(ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 1024, initial: 64 << 10, maximum: 1 << 20))
        var open: [CInt] = [stdin, stdout, stderr]
        var made: [any Channel] = []
        do {
            let input = try await bootstrap.takingOwnershipOfDescriptor(output: stdin) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<Never, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
            open.removeAll { $0 == stdin }
            made.append(input.channel)
            let output = try await lines(bootstrap, stdout, maxLineLength: maxLineLength)
            open.removeAll { $0 == stdout }
            made.append(output.channel)
            let errors = try await lines(bootstrap, stderr, maxLineLength: maxLineLength)
            return StdioAgentPipes(stdin: input, stdout: output, stderr: errors)
        } catch {
            for descriptor in open { close(descriptor) }
            for channel in made { channel.close(promise: nil) }
            throw error
        }
    }

    private static func lines(_ bootstrap: NIOPipeBootstrap, _ descriptor: CInt, maxLineLength: Int) async throws -> NIOAsyncChannel<[AgentLine], Never> {
        try await bootstrap.takingOwnershipOfDescriptor(input: descriptor) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(AgentLineDecoder(maxLineLength: maxLineLength)))
                return try NIOAsyncChannel<[AgentLine], Never>(
                    wrappingChannelSynchronously: channel, configuration: .init(backPressureStrategy: backPressure))
            }
        }
    }

    /// Closes the output channels (a grandchild that inherited them may keep them open after the agent is gone).
    func closeOutput() {
        stdout.channel.close(promise: nil)
        stderr.channel.close(promise: nil)
    }

    /// A pipe whose ends are closed in child processes' exec; `nil` if the system refuses one.
    static func makePipe() -> (read: CInt, write: CInt)? {
        var ends: [CInt] = [-1, -1]
        // The child gets its ends by dup2, which clears the flag. pipe2 sets it in the same call: with pipe and then
        // fcntl, a process spawned by another thread in between inherits the ends, and an agent's stdin with a
        // reader left in that process never fails a write when the agent dies (seen in parallel test runs).
        #if canImport(Glibc)
        if let pipe2 = pipe2Function() {
            guard pipe2(&ends, O_CLOEXEC) == 0 else { return nil }
            return (ends[0], ends[1])
        }
        #endif
        guard pipe(&ends) == 0 else { return nil }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        return (ends[0], ends[1])
    }

    #if canImport(Glibc)
    /// pipe2(2), looked up at run time: Glibc's Swift module does not export it (it needs _GNU_SOURCE).
    private static func pipe2Function() -> (@convention(c) (UnsafeMutablePointer<CInt>, CInt) -> CInt)? {
        guard let symbol = dlsym(nil, "pipe2") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<CInt>, CInt) -> CInt).self)
    }
    #endif
}
