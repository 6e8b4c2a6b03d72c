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
}
