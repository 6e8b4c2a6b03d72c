import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `tailscale status --json` and collects its output on a SwiftNIO pipe channel, within a time limit.
struct TailscaleCommand: Sendable {
    /// The `tailscale` executable's path.
    let executable: String
    /// How long the command may take.
    let timeout: Duration

    /// The command's standard output; throws if it cannot run, fails without output, or takes too long.
    func statusJSON() async throws(TailscaleError) -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["status", "--json"]
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        let (exits, exited) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .bufferingNewest(1))
        process.terminationHandler = { finished in
            exited.yield(finished.terminationStatus)
            exited.finish()
        }
        do {
            try process.run()
        } catch {
            throw .unreachable("cannot run \(executable): \(error.localizedDescription)")
        }
        try? stdout.fileHandleForWriting.close()
        // NIO takes its own descriptor: the FileHandle closes the original.
        let descriptor = dup(stdout.fileHandleForReading.fileDescriptor)
        try? stdout.fileHandleForReading.close()
        guard descriptor >= 0 else {
            process.terminate()
            throw .unreachable("cannot read the output of \(executable): \(String(cString: strerror(errno)))")
        }
        let what = "'\(executable) status --json'"
        do {
            return try await TailscaleDeadline.run(within: timeout, what) {
                let output = try await Self.readAll(descriptor)
                var status: Int32 = 0
                for await code in exits { status = code }
                guard status == 0 || !output.isEmpty else {
                    throw TailscaleError.unreachable("\(what) exited with \(status)")
                }
                return output
            }
        } catch let error as TailscaleError {
            if process.isRunning { process.terminate() }
            throw error
        } catch {
            if process.isRunning { process.terminate() }
            throw .unreachable("\(what): \(error)")
        }
    }

    /// Reads a pipe to its end (at most ``LocalAPIRequest/maxResponse`` bytes); closes it.
    private static func readAll(_ descriptor: CInt) async throws -> Data {
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
            var output = Data()
            for try await chunk in inbound {
                output.append(contentsOf: chunk.readableBytesView)
                if output.count > LocalAPIRequest.maxResponse { break }
            }
            return output
        }
    }
}
