/// The phone web app's files, embedded in the binary (SwiftPM `embedInCode` resources under `App/`): plain HTML, CSS
/// and ES modules, no build step.
public enum WebAppAssets {
    /// One file of the app.
    public struct Asset: Sendable {
        /// The file name under `/app/` (`main.js`); the page itself is `index.html`.
        public let name: String
        /// Its `Content-Type`.
        public let contentType: String
        /// Its bytes.
        public let bytes: [UInt8]
    }

    /// Every file by name.
    public static let all: [String: Asset] = {
        let files: [(String, String, [UInt8])] = [
            ("index.html", "text/html; charset=utf-8", PackageResources.index_html),
            ("app.css", "text/css; charset=utf-8", PackageResources.app_css),
            ("main.js", "text/javascript; charset=utf-8", PackageResources.main_js),
            ("auth.js", "text/javascript; charset=utf-8", PackageResources.auth_js),
            ("rpc.js", "text/javascript; charset=utf-8", PackageResources.rpc_js),
            ("view.js", "text/javascript; charset=utf-8", PackageResources.view_js),
            ("markdown.js", "text/javascript; charset=utf-8", PackageResources.markdown_js),
            ("heartbeat.js", "text/javascript; charset=utf-8", PackageResources.heartbeat_js),
            ("pairing.js", "text/javascript; charset=utf-8", PackageResources.pairing_js),
            ("outbox.js", "text/javascript; charset=utf-8", PackageResources.outbox_js),
            ("restored.js", "text/javascript; charset=utf-8", PackageResources.restored_js),
            ("transport.js", "text/javascript; charset=utf-8", PackageResources.transport_js),
            ("dpop.js", "text/javascript; charset=utf-8", PackageResources.dpop_js),
            ("app.js", "text/javascript; charset=utf-8", PackageResources.app_js),
            ("dom.js", "text/javascript; charset=utf-8", PackageResources.dom_js),
            ("link.js", "text/javascript; charset=utf-8", PackageResources.link_js),
            ("screens.js", "text/javascript; charset=utf-8", PackageResources.screens_js),
            ("session.js", "text/javascript; charset=utf-8", PackageResources.session_js),
            ("sessions.js", "text/javascript; charset=utf-8", PackageResources.sessions_js),
            ("store.js", "text/javascript; charset=utf-8", PackageResources.store_js),
            ("updates.js", "text/javascript; charset=utf-8", PackageResources.updates_js),
            ("composer.js", "text/javascript; charset=utf-8", PackageResources.composer_js),
            ("unpair.js", "text/javascript; charset=utf-8", PackageResources.unpair_js),
            ("manifest.webmanifest", "application/manifest+json", PackageResources.manifest_webmanifest),
            ("icon.svg", "image/svg+xml", PackageResources.icon_svg),
            ("icon192.png", "image/png", PackageResources.icon192_png),
            ("icon512.png", "image/png", PackageResources.icon512_png),
        ]
        return Dictionary(uniqueKeysWithValues: files.map { ($0.0, Asset(name: $0.0, contentType: $0.1, bytes: $0.2)) })
    }()

    /// The page served at `/app`.
    public static var index: Asset? { all["index.html"] }

    /// The size of all files together, in bytes (the budget is 150 KB).
    public static var totalBytes: Int { all.values.reduce(0) { $0 + $1.bytes.count } }
}
