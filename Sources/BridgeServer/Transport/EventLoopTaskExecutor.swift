import NIOCore

/// A channel's event loop as a task executor (SE-0417). A connection's task that prefers it is resumed on the event
/// loop that delivered its message, with no thread woken for it, and a default actor it calls while that actor is free
/// (the hub) runs there too; see ``BridgeServerConfiguration/eventLoopConnections`` for which connections use it.
final class EventLoopTaskExecutor: TaskExecutor {
    /// The loop the jobs run on.
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        eventLoop.execute { job.runSynchronously(on: executor) }
    }
}
