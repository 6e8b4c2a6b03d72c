import NIOCore

/// A channel's event loop as a task executor (SE-0417).
///
/// A connection's task that prefers it is resumed on the event loop that delivered its message, with no thread woken
/// for it, and a default actor it calls while that actor is free (the hub) runs there too; see
/// ``BridgeServerConfiguration/eventLoopConnections`` for which connections use it.
final class EventLoopTaskExecutor: TaskExecutor {
    /// The loop the jobs run on.
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // The closure holds the executor until the job has run: the runtime refers to a task executor without owning
        // it, and a job enqueued here can run after the connection that preferred it ended (a default actor's
        // processing, the hub's, is enqueued on the executor of the task that woke it). An executor freed by then was
        // used after it was gone: jobs were lost and full test runs hung with every thread idle.
        eventLoop.execute { [self] in job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
