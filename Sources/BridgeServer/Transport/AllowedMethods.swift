import BridgeHTTP
import Foundation
import Hummingbird

/// The methods each path of a router answers, so that a request to a known path with a method none of its routes
/// takes gets `405 Method Not Allowed` with `Allow` (RFC 9110 §15.5.6) instead of the router's `404` (issue 26.7).
///
/// Paths are matched by a second Hummingbird router holding one route per path of the first (its `routes`), so a
/// parameter (`/app/{file}`) or a wildcard matches exactly as it does there. `HEAD` is listed wherever `GET` is: the
/// bridge answers it as `GET` without the body (``HTTPEdgeHandler``).
struct AllowedMethods<Context: RequestContext>: Sendable {
    private let probe: RouterResponder<Context>

    /// The table for `routes` (a router's ``Hummingbird/Router/routes``).
    init(routes: [Router<Context>.RouteDescription]) {
        var paths: [String: (path: RouterPath, methods: Set<String>)] = [:]
        for route in routes {
            paths[route.path.description, default: (route.path, [])].methods.insert(route.method.rawValue)
        }
        let router = Router(context: Context.self)
        for (path, methods) in paths.values {
            var names = methods
            if names.contains(HTTPRequest.Method.get.rawValue) { names.insert(HTTPRequest.Method.head.rawValue) }
            let allow = names.sorted().joined(separator: ", ")
            router.on(path, method: .get) { _, _ -> Response in
                var headers = HTTPFields()
                headers[.allow] = allow
                return JSONErrorResponse(
                    status: .methodNotAllowed, code: "method_not_allowed",
                    message: "This path answers \(allow) only.", headers: headers
                ).response
            }
        }
        probe = router.buildResponder()
    }

    /// The `405` for `request`, when its path is one the router knows and its method is not one of that path's;
    /// `nil` otherwise (an unknown path, or a method the path takes).
    func refusal(for request: Request, context: Context) async -> Response? {
        var head = request.head
        head.method = .get
        guard let response = try? await probe.respond(to: Request(head: head, body: .init(buffer: ByteBuffer())), context: context),
              response.status == .methodNotAllowed, let allow = response.headers[.allow]
        else { return nil }
        let method = request.method.rawValue
        if allow.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == method }) { return nil }
        return response
    }
}
