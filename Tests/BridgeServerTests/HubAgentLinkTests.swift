import BridgeACP
import BridgeRPC
import Testing
@testable import BridgeServer

/// The hub's link to the agent as a state machine (``AgentLink``, issue 31 item 2): generations, starts, waiters and
/// ends, without running an agent (the demo agent is made, never run).
@Suite("Hub agent link", .tags(.unit))
struct HubAgentLinkTests {
    static func handle(_ generation: Int) -> (LaunchedAgent, AgentHandle) {
        let agent = DemoAgent()
        return (LaunchedAgent(agent: agent, generation: generation), AgentHandle(agent: agent, generation: generation, initializeResult: [:]))
    }

    @Test("a link starts idle with no agent; each start counts one more generation")
    func generations() {
        var link = AgentLink()
        guard case .idle(nil) = link.state else {
            Issue.record("a new link is not idle: \(link.state)")
            return
        }
        #expect(link.generation == 0)
        #expect(link.launched == nil)
        #expect(link.nextGeneration() == 1)
        #expect(link.nextGeneration() == 2)
        #expect(link.generation == 2)
    }

    @Test("a start that succeeds: the agent runs under its generation, and only under it")
    func startSucceeds() {
        var link = AgentLink()
        link.starting()
        guard case .starting = link.state else {
            Issue.record("not starting: \(link.state)")
            return
        }
        let generation = link.nextGeneration()
        let (launched, handle) = Self.handle(generation)
        link.launch(launched)
        #expect(link.launched(generation: generation)?.generation == generation)
        #expect(link.running(generation: generation) == nil)  // initializing, not ready
        #expect(link.started(.success(handle)).isEmpty)
        #expect(link.running(generation: generation)?.generation == generation)
        #expect(link.running(generation: generation + 1) == nil)
        #expect(link.launched(generation: generation - 1) == nil)
    }

    @Test("a start that fails leaves the link idle with the failure")
    func startFails() {
        var link = AgentLink()
        link.starting()
        _ = link.nextGeneration()
        _ = link.started(.failure(JSONRPCError.internalError("no agent")))
        guard case .idle(let failure) = link.state else {
            Issue.record("not idle: \(link.state)")
            return
        }
        #expect(failure == JSONRPCError.internalError("no agent").message)
        #expect(link.running(generation: 1) == nil)
    }

    @Test("the callers waiting for a start are handed back once, when it finishes")
    func waiters() async {
        var link = AgentLink()
        link.starting()
        let (launched, handle) = Self.handle(link.nextGeneration())
        link.launch(launched)
        let result = await withCheckedContinuation { (continuation: AgentLink.Waiter) in
            link.wait(continuation)
            let waiting = link.started(.success(handle))
            #expect(waiting.count == 1)
            for waiter in waiting { waiter.resume(returning: .success(handle)) }
        }
        #expect((try? result.get())?.generation == 1)
        // Handed back once: a later start has nobody waiting.
        link.starting()
        #expect(link.started(.success(handle)).isEmpty)
    }

    @Test("the running agent ending makes the link idle and forgets it; an agent replaced already changes nothing")
    func ends() {
        var link = AgentLink()
        link.starting()
        let (first, firstHandle) = Self.handle(link.nextGeneration())
        link.launch(first)
        _ = link.started(.success(firstHandle))
        // A restart: the second agent is launched while the first is still known to have ended.
        link.starting()
        let (second, secondHandle) = Self.handle(link.nextGeneration())
        link.launch(second)
        _ = link.started(.success(secondHandle))
        #expect(link.ended(generation: 1, reason: "old") == nil)
        #expect(link.running(generation: 2) != nil)
        #expect(link.ended(generation: 2, reason: "crashed")?.generation == 2)
        guard case .idle(let failure) = link.state else {
            Issue.record("not idle after the running agent ended: \(link.state)")
            return
        }
        #expect(failure == "crashed")
        #expect(link.launched == nil)
        #expect(link.ended(generation: 2, reason: "again") == nil)
    }

    @Test("an agent ending while its replacement starts: forgotten, and the start goes on")
    func endsWhileStarting() {
        var link = AgentLink()
        link.starting()
        let (first, firstHandle) = Self.handle(link.nextGeneration())
        link.launch(first)
        _ = link.started(.success(firstHandle))
        link.starting()  // the hub saw the agent stop reading: it restarts it
        #expect(link.ended(generation: 1, reason: "stopped reading")?.generation == 1)
        guard case .starting = link.state else {
            Issue.record("the start was lost: \(link.state)")
            return
        }
    }
}
