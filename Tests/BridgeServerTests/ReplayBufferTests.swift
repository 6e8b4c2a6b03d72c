@testable import BridgeServer
import BridgeRPC
import Testing

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
