import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ChildProcess {
    /// What a short command printed and how it ended.
    public struct Completed: Sendable, Hashable {
        /// How it ended.
        public var exit: Exit
        /// Its standard output (with standard error when asked), at most the limit given.
        public var output: [UInt8]

        /// The output as text (invalid UTF-8 repaired).
        public var text: String { String(decoding: output, as: UTF8.self) }
    }

    /// Runs a short command (a direct child, stdin from `/dev/null`) and collects its output on a SwiftNIO pipe
    /// channel (no thread waits on the pipe), at most `limit` bytes (the rest is not read: a chatty command gets
    /// EPIPE).
    ///
    /// Cancelling the calling task kills the command; the call still returns once it has ended.
    /// - Parameters:
    ///   - executable: the program's path.
    ///   - arguments: its arguments (without the program's name).
    ///   - environment: its environment; `nil` passes the bridge's own.
    ///   - withErrors: standard error into the same output; `false`: to `/dev/null`.
    ///   - limit: the most bytes of output read.
    /// - Returns: how the command ended and its output (empty when the calling task was cancelled before it was read).
    /// - Throws: ``ChildProcessError`` when it cannot start (or its output cannot be read).
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, withErrors: Bool,
        limit: Int = 1 << 20
    ) async throws(ChildProcessError) -> Completed {
        let pipe = try ChildProcessPipe(for: executable)
        let process: ChildProcess
        do {
            defer { close(pipe.write) }  // the child has its copy
            process = try spawn(Request(
                executable: executable, arguments: arguments,
                environment: environment ?? ProcessInfo.processInfo.environment,
                output: pipe.write, error: withErrors ? pipe.write : nil, supervised: false))
        } catch {
            close(pipe.read)
            throw error
        }
        let output: [UInt8]
        do {
            output = try await withTaskCancellationHandler {
                try await readAll(pipe.read, limit: limit)
            } onCancel: {
                process.kill()
            }
        } catch {
            process.kill()
            let exit = await process.wait()
            // Cancelled before the pipe was read: the command was killed, as cancellation asks.
            if Task.isCancelled { return Completed(exit: exit, output: []) }
            let code = (error as? IOError)?.errnoCode ?? EIO
            throw ChildProcessError(executable: executable, stage: .pipe, errno: code)
        }
        return Completed(exit: await process.wait(), output: output)
    }

    /// Reads a pipe to its end (at most `limit` bytes); takes the descriptor and closes it.
    private static func readAll(_ descriptor: Int32, limit: Int) async throws -> [UInt8] {
        let channel: NIOAsyncChannel<ByteBuffer, Never>
        do {
            channel = try await NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .takingOwnershipOfDescriptor(input: descriptor) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, Never>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            close(descriptor)
            throw error
        }
        return try await channel.executeThenClose { inbound in
            var output: [UInt8] = []
            for try await chunk in inbound {
                output += chunk.readableBytesView.prefix(limit - output.count)
                if output.count >= limit { break }
            }
            return output
        }
    }
}
