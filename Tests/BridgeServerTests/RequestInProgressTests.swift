import Testing

@testable import BridgeServer

/// The request state both HTTP edges share (HTTP/1.1's ``HTTPEdgeHandler``, HTTP/2's ``HTTP2StreamGuard``).
@Suite("The request in progress at the HTTP edges", .tags(.unit))
struct RequestInProgressTests {
    @Test("a body within the limit passes; the byte over it is refused with 413 before an answer started")
    func overTheLimitBeforeAnAnswer() {
        var request = RequestInProgress(maxBodySize: 10)
        #expect(request.body(6) == .pass)
        #expect(request.body(4) == .pass)
        #expect(request.body(1) == .refuseTooLarge)
        #expect(request.dropping)
        // The rest of it is dropped, never refused twice.
        #expect(request.body(100) == .drop)
    }

    @Test("over the limit after the answer started: only a close (one response per request)")
    func overTheLimitAfterAnAnswer() {
        var request = RequestInProgress(maxBodySize: 10)
        request.answerStarted(final: false)  // 100 Continue
        #expect(!request.responded)
        request.answerStarted(final: true)
        #expect(request.body(11) == .closeTooLarge)
    }

    @Test("a request answered here drops its body, and the next request on the connection starts clean")
    func droppedThenNext() {
        var request = RequestInProgress(maxBodySize: 10)
        request.isHead = true
        request.drop()
        request.answerStarted(final: true)
        #expect(request.body(3) == .drop)
        request.start()
        #expect(!request.dropping && !request.responded && !request.isHead)
        #expect(request.body(10) == .pass)
    }
}
