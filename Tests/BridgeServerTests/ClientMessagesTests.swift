import NIOCore
import Synchronization
import Testing
@testable import BridgeServer

/// ``ClientMessages``, the queue from a connection's event loop to its task (issue 32: a queue of its own instead of an
/// `AsyncStream`): order, the end after ``ClientMessages/finish()``, a waiting consumer resumed by a message, by the
/// finish and by cancellation, and the read backpressure's water marks.
@Suite("ClientMessages: the event loop's messages to the connection's task", .tags(.unit))
struct ClientMessagesTests {
    private static func text(_ string: String) -> ClientMessages.Message {
        .text(ByteBuffer(string: string))
    }

    private static func string(_ message: ClientMessages.Message?) -> String? {
        switch message {
        case .text(let bytes)?: String(buffer: bytes)
        case .binary(let bytes)?: "binary:\(String(buffer: bytes))"
        case nil: nil
        }
    }

    @Test("messages yielded before and while the task waits arrive in order; after finish, the waiting ones, then the end")
    func orderAndFinish() async {
        let messages = ClientMessages()
        messages.yield(Self.text("a"))
        messages.yield(.binary(ByteBuffer(string: "b")))
        let reader = Task { () -> [String] in
            var seen: [String] = []
            for await message in messages {
                if let text = Self.string(message) { seen.append(text) }
            }
            return seen
        }
        for index in 0..<100 { messages.yield(Self.text("\(index)")) }
        messages.finish()
        messages.yield(Self.text("after finish"))
        let seen = await reader.value
        #expect(seen == ["a", "binary:b"] + (0..<100).map { "\($0)" })
    }

    @Test("a task waiting for a message is resumed by the next one, and by finish with the end")
    func waitingConsumer() async {
        let messages = ClientMessages()
        let got = Mutex<[String]>([])
        let reader = Task {
            for await message in messages {
                if let text = Self.string(message) { got.withLock { $0.append(text) } }
            }
        }
        // Whether the reader already waits or not, each message arrives once and in order.
        for index in 0..<20 {
            messages.yield(Self.text("m\(index)"))
            await Task.yield()
        }
        messages.finish()
        await reader.value
        #expect(got.withLock { $0 } == (0..<20).map { "m\($0)" })
    }

    @Test("cancelling the consuming task ends its iteration, waiting or not")
    func cancellation() async {
        let messages = ClientMessages()
        let reader = Task { () -> Int in
            var count = 0
            for await _ in messages { count += 1 }
            return count
        }
        reader.cancel()
        // Ends without a finish: a connection task cancelled at shutdown must not wait for a message forever.
        #expect(await reader.value == 0)
        let again = Task { () -> Bool in
            var iterator = messages.makeAsyncIterator()
            return await iterator.next() == nil
        }
        #expect(await again.value)
    }

    @Test("reads are held at the high-water mark and resumed once the task is down to the low-water mark")
    func waterMarks() async {
        let messages = ClientMessages()
        let resumed = Mutex(0)
        messages.onLowWater = { resumed.withLock { $0 += 1 } }
        for index in 0..<ClientMessages.highWater - 1 { messages.yield(Self.text("\(index)")) }
        #expect(!messages.holdReads())
        messages.yield(Self.text("last"))
        #expect(messages.holdReads())
        var iterator = messages.makeAsyncIterator()
        let toLowWater = ClientMessages.highWater - ClientMessages.lowWater
        for taken in 1...toLowWater {
            _ = await iterator.next()
            #expect(resumed.withLock { $0 } == (taken == toLowWater ? 1 : 0))
        }
        _ = await iterator.next()
        #expect(resumed.withLock { $0 } == 1)
        messages.onLowWater = nil
    }
}
