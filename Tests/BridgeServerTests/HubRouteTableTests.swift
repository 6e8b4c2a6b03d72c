import BridgeACP
import BridgeRPC
import Testing
@testable import BridgeServer

/// The requests the bridge sent the agent as a value (``RouteTable``, issue 31 item 2): their ids, and what the hub
/// asks of them (a session being created, a prompt running, a client's request by its own id), without a bridge.
@Suite("Hub route table", .tags(.unit))
struct HubRouteTableTests {
    static func client(
        _ connection: ConnectionID, _ method: String, id: JSONRPCID = .int(1), session: String? = nil, generation: Int = 1
    ) -> Route {
        .client(ClientRoute(connection: connection, clientID: id, method: method, batch: nil, sessionID: session,
                            generation: generation, started: .now))
    }

    @Test("ids count from 1 and are never given twice: reserved, added, or freed")
    func ids() {
        var table = RouteTable()
        let first = table.add(Self.client(1, ACPMethod.sessionNew))
        let reserved = table.reserveID()
        let third = table.add(.retention(session: "s", generation: 1))
        #expect([first, reserved, third] == [1, 2, 3])
        #expect(table.count == 2)
        #expect(table[reserved] == nil)
        table.put(Self.client(2, ACPMethod.sessionPrompt), at: reserved)
        #expect(table.count == 3)
        #expect(table.remove(first) != nil)
        #expect(table.remove(first) == nil)
        #expect(table.add(.retention(session: "t", generation: 1)) == 4)
    }

    @Test("removing by a rule takes the matching requests, oldest first, and leaves the rest")
    func removeByRule() {
        var table = RouteTable()
        for index in 1...6 {
            _ = table.add(Self.client(ConnectionID(index % 2), ACPMethod.sessionPrompt, generation: index <= 3 ? 1 : 2))
        }
        let second = table.ids { route in route.generation == 2 }
        #expect(second == [4, 5, 6])
        let removed = table.removeAll { route in
            guard case .client(let client) = route else { return false }
            return client.connection == 1
        }
        #expect(removed.map(\.id) == [1, 3, 5])
        #expect(table.count == 3)
        let left = table.ids { _ in true }
        #expect(left == [2, 4, 6])
    }

    @Test("a session is being created while a session/new or session/fork waits, and not after its answer")
    func sessionBeingCreated() {
        var table = RouteTable()
        #expect(!table.sessionBeingCreated)
        let prompt = table.add(Self.client(1, ACPMethod.sessionPrompt, session: "s"))
        #expect(!table.sessionBeingCreated)
        let fork = table.add(Self.client(1, ACPMethod.sessionFork))
        #expect(table.sessionBeingCreated)
        _ = table.remove(fork)
        let new = table.add(Self.client(2, ACPMethod.sessionNew))
        #expect(table.sessionBeingCreated)
        _ = table.remove(new)
        _ = table.remove(prompt)
        #expect(!table.sessionBeingCreated)
    }

    @Test("the sessions with a prompt waiting are those of session/prompt routes, not of other requests")
    func promptsRunning() {
        var table = RouteTable()
        let a = table.add(Self.client(1, ACPMethod.sessionPrompt, session: "a"))
        _ = table.add(Self.client(2, ACPMethod.sessionPrompt, session: "b"))
        _ = table.add(Self.client(2, ACPMethod.sessionSetMode, session: "c"))
        _ = table.add(.retention(session: "d", generation: 1))
        #expect(table.promptSessions == ["a", "b"])
        #expect(table.promptRunning("a"))
        #expect(!table.promptRunning("c"))
        #expect(!table.promptRunning("d"))
        _ = table.remove(a)
        #expect(table.promptSessions == ["b"])
        #expect(!table.promptRunning("a"))
    }

    @Test("a client's request is found by its connection and its own id, whatever id the agent knows it by")
    func clientRequest() {
        var table = RouteTable()
        _ = table.add(Self.client(1, ACPMethod.sessionPrompt, id: .string("p")))
        let wanted = table.add(Self.client(2, ACPMethod.sessionPrompt, id: .string("p")))
        _ = table.add(Self.client(2, ACPMethod.sessionPrompt, id: .int(7)))
        let found = table.clientRequest(of: 2, id: .string("p"))
        #expect(found?.id == wanted)
        #expect(found?.route.connection == 2)
        #expect(table.clientRequest(of: 3, id: .string("p")) == nil)
        #expect(table.clientRequest(of: 1, id: .int(7)) == nil)
    }

    @Test("a client joins the sessions it is creating, forking, loading or resuming, except those it is attached to")
    func joining() {
        var table = RouteTable()
        _ = table.add(Self.client(1, ACPMethod.sessionNew))
        _ = table.add(Self.client(1, ACPMethod.sessionFork))
        _ = table.add(Self.client(1, ACPMethod.sessionLoad, session: "loading"))
        _ = table.add(Self.client(1, ACPMethod.sessionResume, session: "elsewhere"))
        _ = table.add(Self.client(1, ACPMethod.sessionPrompt, session: "x"))
        _ = table.add(Self.client(2, ACPMethod.sessionNew))
        #expect(table.joining(1, attached: []) == 4)
        #expect(table.joining(1, attached: ["loading"]) == 3)
        #expect(table.joining(2, attached: ["loading"]) == 1)
        #expect(table.joining(3, attached: []) == 0)
    }

    @Test("a route knows its kind: the bridge's own, a retention close, or a client's")
    func kinds() async {
        #expect(!Route.retention(session: "s", generation: 1).isBridge)
        #expect(Route.retention(session: "s", generation: 1).isRetention)
        #expect(!Self.client(1, ACPMethod.sessionPrompt).isBridge)
        #expect(!Self.client(1, ACPMethod.sessionPrompt).isRetention)
        let response = await withCheckedContinuation { (continuation: CheckedContinuation<JSONRPCResponse, Never>) in
            let route = Route.bridge(continuation, generation: 3)
            #expect(route.isBridge)
            #expect(!route.isRetention)
            #expect(route.generation == 3)
            continuation.resume(returning: JSONRPCResponse(id: .int(1), result: "done"))
        }
        #expect(response.id == .int(1))
    }

    @Test("the bridge's own requests are told apart from clients' and retention's, and resumed when removed")
    func bridgeRoutes() async {
        var table = RouteTable()
        _ = table.add(Self.client(1, ACPMethod.sessionPrompt))
        _ = table.add(.retention(session: "s", generation: 1))
        let id = table.reserveID()
        let response = await withCheckedContinuation { (continuation: CheckedContinuation<JSONRPCResponse, Never>) in
            table.put(.bridge(continuation, generation: 3), at: id)
            let retention = table.ids { route in route.isRetention }
            #expect(retention == [2])
            let bridge = table.removeAll { route in route.isBridge }
            #expect(bridge.map(\.id) == [id])
            #expect(bridge.first?.route.generation == 3)
            continuation.resume(returning: JSONRPCResponse(id: .int(id), result: "done"))
        }
        #expect(response.id == .int(id))
        #expect(table.count == 2)
    }
}
