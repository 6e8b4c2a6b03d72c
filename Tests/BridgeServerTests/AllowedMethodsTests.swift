import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import Testing
@testable import BridgeServer

/// Issue 26.7: a routed path's other methods get `405` with `Allow`, through the responder the bridge serves
/// (``PathNormalizingResponder`` with ``AllowedMethods``), on a router with a parameter route and a route that answers
/// `404` itself.
@Suite("405 with Allow", .tags(.unit))
struct AllowedMethodsTests {
    static func responder() -> PathNormalizingResponder<RouterResponder<BasicRequestContext>> {
        let router = Router(context: BasicRequestContext.self)
        router.get("/a") { _, _ in Response(status: .ok) }
        router.post("/a") { _, _ in Response(status: .ok) }
        router.get("/files/{name}") { _, context in
            Response(status: context.parameters.get("name") == "there" ? .ok : .notFound)
        }
        router.post("/only-post") { _, _ in Response(status: .ok) }
        return PathNormalizingResponder(inner: router.buildResponder(), allowed: AllowedMethods(routes: router.routes))
    }

    static func respond(_ method: HTTPRequest.Method, _ path: String) async throws -> Response {
        let context = BasicRequestContext(source: .init(channel: EmbeddedChannel(), logger: Logger(label: "test.allowed")))
        let request = Request(head: HTTPRequest(method: method, scheme: nil, authority: "x", path: path),
                              body: .init(buffer: ByteBuffer()))
        return try await responder().respond(to: request, context: context)
    }

    @Test("a method none of the path's routes takes: 405, Allow lists the path's methods and HEAD beside GET")
    func methodNotAllowed() async throws {
        let response = try await Self.respond(.delete, "/a")
        #expect(response.status == .methodNotAllowed)
        #expect(response.headers[.allow] == "GET, HEAD, POST")
        #expect(try await Self.respond(.put, "/files/x").headers[.allow] == "GET, HEAD")
        #expect(try await Self.respond(.get, "/only-post").headers[.allow] == "POST")
        // Any spelling of the path.
        #expect(try await Self.respond(.delete, "//a/./").status == .methodNotAllowed)
    }

    @Test("routed methods, a route's own 404 and unknown paths are answered as before")
    func othersUnchanged() async throws {
        #expect(try await Self.respond(.get, "/a").status == .ok)
        #expect(try await Self.respond(.post, "/a").status == .ok)
        #expect(try await Self.respond(.get, "/files/there").status == .ok)
        let own = try await Self.respond(.get, "/files/missing")
        #expect(own.status == .notFound && own.headers[.allow] == nil)
        let unknown = try await Self.respond(.delete, "/nowhere")
        #expect(unknown.status == .notFound && unknown.headers[.allow] == nil)
    }
}
