/// What the HTTP edges (``HTTPEdgeHandler`` for an HTTP/1.1 connection, ``HTTP2StreamGuard`` for an HTTP/2 stream)
/// track of the request in progress: whether it is answered here and dropped, whether its answer has started, its body
/// against the size limit, and whether it is a `HEAD` (answered as `GET` without the body).
struct RequestInProgress {
    /// What to do with a part of the request's body.
    enum BodyVerdict: Equatable {
        /// Pass it on.
        case pass
        /// Drop it: the request is answered here already.
        case drop
        /// It took the body over the limit: answer `413` (nothing was answered yet).
        case refuseTooLarge
        /// It took the body over the limit after the answer started: one response per request, so only close.
        case closeTooLarge
    }

    /// The most body bytes a request may have.
    let maxBodySize: Int
    /// The request is answered here; its parts are not passed on.
    private(set) var dropping = false
    /// The answer has started (a final status, or `101` for an upgrade: not `100 Continue`).
    private(set) var responded = false
    /// The request is a `HEAD`: its answer goes out without a body.
    var isHead = false
    private var bodyBytes = 0

    init(maxBodySize: Int) {
        self.maxBodySize = maxBodySize
    }

    /// A new request's head arrived (HTTP/1.1 keeps one connection for several).
    mutating func start() {
        self = RequestInProgress(maxBodySize: maxBodySize)
    }

    /// The request is answered here: what follows of it is dropped.
    mutating func drop() {
        dropping = true
    }

    /// `count` more body bytes arrived.
    mutating func body(_ count: Int) -> BodyVerdict {
        bodyBytes += count
        if !dropping, bodyBytes > maxBodySize {
            dropping = true
            return responded ? .closeTooLarge : .refuseTooLarge
        }
        return dropping ? .drop : .pass
    }

    /// The answer's head goes out; `final` says whether it ends the informational ones.
    mutating func answerStarted(final: Bool) {
        if final { responded = true }
    }
}
