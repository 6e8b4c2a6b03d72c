import BridgeRPC
import Testing
@testable import BridgeServer

@Suite("The replay buffer's ring", .tags(.unit))
struct ReplayBufferTests {
    private func seqs(_ buffer: ReplayBuffer) -> [Int64] { buffer.map(\.seq) }

    @Test("keeps the latest `limit` updates, oldest first, however many went through")
    func ring() {
        var buffer = ReplayBuffer()
        #expect(buffer.first == nil)
        for seq in Int64(1)...3 { buffer.append(BufferedUpdate(seq: seq, params: .int(seq)), limit: 5) }
        #expect(seqs(buffer) == [1, 2, 3])
        for seq in Int64(4)...12 { buffer.append(BufferedUpdate(seq: seq, params: .int(seq)), limit: 5) }
        #expect(seqs(buffer) == [8, 9, 10, 11, 12])
        #expect(buffer.first?.seq == 8)
        #expect(buffer.count == 5)
        #expect(buffer.map(\.params) == [8, 9, 10, 11, 12])
    }

    @Test("a limit of 0 keeps nothing; a changed limit keeps the newest")
    func limits() {
        var buffer = ReplayBuffer()
        buffer.append(BufferedUpdate(seq: 1, params: nil), limit: 0)
        #expect(buffer.count == 0)
        for seq in Int64(1)...7 { buffer.append(BufferedUpdate(seq: seq, params: nil), limit: 3) }
        buffer.append(BufferedUpdate(seq: 8, params: nil), limit: 2)
        #expect(seqs(buffer) == [7, 8])
        buffer.append(BufferedUpdate(seq: 9, params: nil), limit: 4)
        buffer.append(BufferedUpdate(seq: 10, params: nil), limit: 4)
        buffer.append(BufferedUpdate(seq: 11, params: nil), limit: 4)
        #expect(seqs(buffer) == [8, 9, 10, 11])
    }
}

@Suite("The replay buffer's byte limit", .tags(.unit))
struct ReplayBufferByteTests {
    private func update(_ seq: Int64, bytes: Int) -> BufferedUpdate {
        BufferedUpdate(seq: seq, params: .string(String(repeating: "x", count: bytes - 2)))
    }

    @Test("drops the oldest updates beyond byteLimit, whatever the count limit allows")
    func byteLimit() {
        var buffer = ReplayBuffer()
        for seq in Int64(1)...10 { buffer.append(update(seq, bytes: 1000), limit: 1000, byteLimit: 3500) }
        #expect(buffer.map(\.seq) == [8, 9, 10])
        #expect(buffer.byteCount == 3000)
        #expect(buffer.first?.seq == 8)
    }

    @Test("an update larger than byteLimit keeps nothing, so a resume reports the gap")
    func oversized() {
        var buffer = ReplayBuffer()
        for seq in Int64(1)...3 { buffer.append(update(seq, bytes: 100), limit: 10, byteLimit: 1000) }
        buffer.append(update(4, bytes: 5000), limit: 10, byteLimit: 1000)
        #expect(buffer.count == 0)
        #expect(buffer.first == nil)
        buffer.append(update(5, bytes: 100), limit: 10, byteLimit: 1000)
        #expect(buffer.map(\.seq) == [5])
    }

    @Test("long runs stay bounded and in order (dropped slots are compacted)")
    func longRun() {
        var buffer = ReplayBuffer()
        for seq in Int64(1)...10_000 { buffer.append(update(seq, bytes: 10), limit: 100, byteLimit: 500) }
        #expect(buffer.map(\.seq) == Array(9951...10_000))
        #expect(buffer.byteCount == 500)
    }

    @Test("the byte size is the compact JSON size")
    func sizes() throws {
        for text in [#"{"a":[1,-20,"xy",null,true,false,{}],"b":{"c":[]}}"#, "[]", "{}", "-123", #""é""#] {
            let value = try JSONValue(parsing: text)
            #expect(ReplayBuffer.byteSize(of: value) >= text.utf8.count - 1)
            #expect(ReplayBuffer.byteSize(of: value) <= text.utf8.count + 8)
        }
    }
}
