// swift-tools-version:6.1
// oa-bridge: find and drive a headless desktop from a phone, with zero configuration.

import PackageDescription

/// Settings shared by every Swift target in the package.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    // A file uses another module's members only if it imports that module itself (SE-0444).
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "oa-bridge",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "oa-bridge", targets: ["oa-bridge"]),
        .library(name: "BridgeRPC", targets: ["BridgeRPC"]),
        .library(name: "BridgeACP", targets: ["BridgeACP"]),
        .library(name: "BridgeDiscovery", targets: ["BridgeDiscovery"]),
        .library(name: "BridgePairingWire", targets: ["BridgePairingWire"]),
        .library(name: "BridgePairing", targets: ["BridgePairing"]),
        .library(name: "BridgeDPoP", targets: ["BridgeDPoP"]),
        .library(name: "BridgePairingUI", targets: ["BridgePairingUI"]),
        .library(name: "BridgeTime", targets: ["BridgeTime"]),
        .library(name: "BridgeWorkspace", targets: ["BridgeWorkspace"]),
        .library(name: "BridgeTerminal", targets: ["BridgeTerminal"]),
        .library(name: "BridgeTailscale", targets: ["BridgeTailscale"]),
        .library(name: "BridgeHTTP", targets: ["BridgeHTTP"]),
        .library(name: "BridgeServer", targets: ["BridgeServer"]),
        .library(name: "BridgeConfig", targets: ["BridgeConfig"]),
        .library(name: "BridgeClient", targets: ["BridgeClient"]),
        .library(name: "BridgeDiagnostics", targets: ["BridgeDiagnostics"]),
        .library(name: "BridgeTLS", targets: ["BridgeTLS"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
    ],
    targets: [
        // MARK: C libraries from the system

        /// libavahi-client and libavahi-common (Debian: libavahi-client-dev).
        .systemLibrary(
            name: "CAvahi",
            pkgConfig: "avahi-client",
            providers: [.apt(["libavahi-client-dev"])]
        ),
        /// The dns_sd API: Avahi's compatibility library on Linux, the system's own on macOS.
        .systemLibrary(
            name: "CDNSSD",
            providers: [.apt(["libavahi-compat-libdnssd-dev"])]
        ),
        /// libqrencode (Debian: libqrencode-dev).
        .systemLibrary(
            name: "CQREncode",
            pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"]), .brew(["qrencode"])]
        ),
        /// libpng (Debian: libpng-dev).
        .systemLibrary(
            name: "CPNG",
            pkgConfig: "libpng",
            providers: [.apt(["libpng-dev"]), .brew(["libpng"])]
        ),
        /// openat2(2) for the workspace file code (Swift cannot call the variadic syscall(2)).
        .target(name: "CWorkspaceFS"),
        /// Landlock's system calls for BridgeSandbox's rulesets.
        .target(name: "CSandbox"),
        /// The one spawn of BridgeProcess: code between fork and exec (directory by descriptor, signals reset, Landlock,
        /// a supervisor that dies with the bridge).
        .target(name: "CProcess"),

        // MARK: Library modules, dependencies pointing one way

        .target(
            name: "BridgeRPC",
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        /// Child processes: the one type every program the bridge starts goes through (CProcess's spawn), typed launch
        /// errors with errno, short commands' output on SwiftNIO pipes.
        .target(
            name: "BridgeProcess",
            dependencies: [
                "CProcess",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        .target(
            name: "BridgeACP",
            dependencies: [
                "BridgeProcess",
                "BridgeRPC",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        .target(
            name: "BridgeDiscovery",
            dependencies: [
                .target(name: "CAvahi", condition: .when(platforms: [.linux])),
                "CDNSSD",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")],
            linkerSettings: [.linkedLibrary("dns_sd", .when(platforms: [.linux]))]
        ),
        /// What a client and the bridge exchange about pairing: the QR payload and the token-exchange bodies.
        /// Foundation only, so a phone app links no SQLite, libqrencode or libpng.
        .target(
            name: "BridgePairingWire",
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        /// Device-bound tokens (RFC 9449, DPoP): a device's P-256 key and its JWK thumbprint (RFC 7638), the proofs a
        /// client signs, and the bridge's check of each proof (signature, binding, method and URL, age, replay, nonce).
        .target(
            name: "BridgeDPoP",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        /// The desktop's token store, authenticator and pairing session (SQLite through GRDB).
        .target(
            name: "BridgePairing",
            dependencies: [
                "BridgePairingWire",
                "BridgeDPoP",
                "BridgeTime",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        /// The pairing code as people see it: QR code (libqrencode), PNG (libpng), the /pair page, the terminal banner.
        .target(
            name: "BridgePairingUI",
            dependencies: ["BridgePairing", "BridgePairingWire", "CQREncode", "CPNG"],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        /// The phone web app at /app (issue 13): HTML, CSS and ES modules embedded in the binary, and its routes.
        .target(
            name: "BridgeWebApp",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            resources: [
                .embedInCode("App/index.html"), .embedInCode("App/app.css"), .embedInCode("App/main.js"),
                .embedInCode("App/auth.js"), .embedInCode("App/rpc.js"), .embedInCode("App/view.js"),
                .embedInCode("App/markdown.js"), .embedInCode("App/manifest.webmanifest"), .embedInCode("App/icon.svg"),
                .embedInCode("App/icon192.png"), .embedInCode("App/icon512.png"),
                .embedInCode("App/heartbeat.js"), .embedInCode("App/pairing.js"), .embedInCode("App/outbox.js"),
                .embedInCode("App/transport.js"), .embedInCode("App/restored.js"), .embedInCode("App/dpop.js"),
                .embedInCode("App/app.js"), .embedInCode("App/dom.js"), .embedInCode("App/link.js"),
                .embedInCode("App/screens.js"), .embedInCode("App/session.js"), .embedInCode("App/sessions.js"),
                .embedInCode("App/store.js"), .embedInCode("App/updates.js"), .embedInCode("App/composer.js"),
                .embedInCode("App/unpair.js"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        /// The time the bridge's timers run on (`BridgeClock`, which tests replace) and durations as people read them.
        .target(
            name: "BridgeTime",
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        /// The bridge's sessions kept across restarts: a SQLite database (GRDB, WAL) in the state directory, written in
        /// batches off the relay's path.
        .target(
            name: "BridgeSessionStore",
            dependencies: [
                "BridgeTime",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        /// The agent's `fs/*` requests: files confined to a session's directories by `openat2(2)` (CWorkspaceFS) and a
        /// walk beneath a directory descriptor, run off the hub on a thread pool within a time limit.
        .target(
            name: "BridgeWorkspace",
            dependencies: [
                "BridgeSandbox",
                "BridgeRPC",
                "BridgeACP",
                "BridgeTime",
                "CWorkspaceFS",
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        /// The agent's `terminal/*` requests: commands run on the desktop, their output kept and batched for the phones.
        .target(
            name: "BridgeTerminal",
            dependencies: [
                "BridgeProcess",
                "BridgeSandbox",
                "BridgeRPC",
                "BridgeACP",
                "BridgeTime",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        /// Everything Tailscale: the tailnet identity from tailscaled's LocalAPI or the CLI, and the MagicDNS name's
        /// HTTPS certificate, fetched and renewed.
        .target(
            name: "BridgeTailscale",
            dependencies: [
                "BridgeProcess",
                "BridgeTime",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        /// The bridge's HTTP routes and policies that need no hub: pairing, account, status and metrics routes, the
        /// `--auth none` network gate, the plaintext policy, JSON error answers and the request contexts.
        .target(
            name: "BridgeHTTP",
            dependencies: [
                "BridgePairing",
                "BridgeDPoP",
                "BridgePairingUI",
                "BridgeTLS",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        /// permessage-deflate (RFC 7692) for WebSocket peers: the negotiation, a bounded inflater, a compressor with
        /// small windows, and a client pipeline handler (zlib through compress-nio).
        .target(
            name: "BridgeWebSocketDeflate",
            dependencies: [
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        /// The bridge itself: the hub between phones and the agent, the WebSocket transport, the service assembly.
        .target(
            name: "BridgeServer",
            dependencies: [
                "BridgeProcess",
                "BridgeSandbox",
                "BridgeRPC",
                "BridgeACP",
                "BridgeDiscovery",
                "BridgePairing",
                "BridgeWebApp",
                "BridgeTime",
                "BridgeWorkspace",
                "BridgeTerminal",
                "BridgeTailscale",
                "BridgeHTTP",
                "BridgeSessionStore",
                "BridgeWebSocketDeflate",
                "BridgeDPoP",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                // HTTP/2 (ALPN `h2`, h2c with prior knowledge): NIOHTTP2's framing, streams as HTTPTypes parts.
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHTTPTypesHTTP2", package: "swift-nio-extras"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                "BridgeTLS",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        .target(
            name: "BridgeClient",
            dependencies: [
                "BridgeRPC",
                "BridgeDiscovery",
                "BridgePairingWire",
                "BridgeDPoP",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                "BridgeTLS",
                "BridgeWebSocketDeflate",
                "BridgeTime",
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),

        /// The settings of `serve`: the YAML config file, `OA_BRIDGE_*` variables, flags and defaults merged with
        /// their sources; the log format and handler.
        .target(
            name: "BridgeConfig",
            dependencies: [
                "BridgeTerminal",
                "BridgeSandbox",
                "BridgeServer",
                "BridgeDiscovery",
                "BridgePairing",
                "BridgeWorkspace",
                "BridgeHTTP",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),

        /// `oa-bridge doctor`'s checks: what must hold on the desktop for a phone to find and reach it.
        .target(
            name: "BridgeDiagnostics",
            dependencies: [
                "BridgeProcess",
                "BridgeTime",
                "BridgeSandbox",
                "BridgeClient",
                "BridgeDiscovery",
                "BridgePairing",
                "BridgePairingWire",
                "BridgeTLS",
                "BridgeTailscale",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            // Imports internal unless marked `public import` (SE-0409), as in every library and executable here; the
            // test targets, which declare nothing public, are left without it.
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),

        /// Confinement of what the agent starts: the bridge's own files, Landlock rulesets (applied by BridgeProcess's spawn).
        .target(
            name: "BridgeSandbox",
            dependencies: ["CSandbox", "BridgeProcess"],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),

        /// The bridge's TLS identity (self-signed certificate and key in the state directory) and its pin, and the
        /// server side of TLS on SwiftNIO (the context, the first-byte sniffer, the handshake deadline); no Hummingbird.
        .target(
            name: "BridgeTLS",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),

        // MARK: The command-line tool

        .executableTarget(
            name: "oa-bridge",
            dependencies: [
                "BridgeProcess",
                "BridgeServer",
                "BridgeTerminal",
                "BridgeConfig",
                "BridgeTLS",
                "BridgeClient",
                "BridgeDiagnostics",
                "BridgeWorkspace",
                "BridgeHTTP",
                "BridgeDiscovery",
                "BridgePairing",
                "BridgePairingUI",
                "BridgeRPC",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),

        .executableTarget(
            name: "bench",
            dependencies: [
                "BridgeServer",
                "BridgeTLS",
                "BridgeSessionStore",
                "BridgeDPoP",
                "BridgeRPC",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            // Without MemberImportVisibility: the benchmarks read `timeval`/`timespec` fields, whose owning module
            // (Glibc, CDispatch or CoreFoundation) changes with the build's load order on Linux, so a clean build
            // failed where an incremental one passed. The libraries keep the rule.
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("InternalImportsByDefault")]
        ),

        // MARK: Examples a user copies

        .executableTarget(
            name: "EchoAgent",
            dependencies: ["BridgeRPC"],
            path: "Examples/EchoAgent",
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),

        .executableTarget(
            name: "PhoneClient",
            dependencies: [
                "BridgeClient",
                "BridgeDiscovery",
                "BridgePairingWire",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/PhoneClient",
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),

        // MARK: Tests

        .testTarget(
            name: "BridgeRPCTests",
            dependencies: ["BridgeRPC"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeACPTests",
            dependencies: [
                "BridgeACP", "BridgeProcess", "BridgeRPC", "BridgeTestKit", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeDiscoveryTests",
            dependencies: ["BridgeDiscovery", "BridgeTestKit", "CDNSSD", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeDiagnosticsTests",
            dependencies: [
                "BridgeDiagnostics", "BridgeDiscovery", "BridgeTestKit", "BridgeSandbox", "BridgePairing", "BridgeClient",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgePairingTests",
            dependencies: [
                "BridgePairing", "BridgePairingWire", "BridgePairingUI", "CPNG", "BridgeDPoP", "BridgeTestKit",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        // The test kit shared by the test targets: the hand-moved clock, reserved ports, an in-process ACP agent a test
        // scripts (BridgeServerConfiguration.inProcessAgent); not a product.
        .target(
            name: "BridgeTestKit",
            dependencies: ["BridgeACP", "BridgeRPC", "BridgeTime", .product(name: "Logging", package: "swift-log")],
            path: "Tests/BridgeTestKit",
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),
        .testTarget(
            name: "BridgeSessionStoreTests",
            dependencies: ["BridgeSessionStore", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeDPoPTests",
            dependencies: [
                "BridgeDPoP",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeTLSTests",
            dependencies: [
                "BridgeTLS", .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"), .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeWorkspaceTests",
            dependencies: [
                "BridgeSandbox",
                "BridgeWorkspace", "BridgeRPC", "BridgeTestKit", "CWorkspaceFS", .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeTerminalTests",
            dependencies: ["BridgeTerminal", "BridgeTestKit", .product(name: "Logging", package: "swift-log"), "BridgeSandbox"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeTailscaleTests",
            dependencies: [
                "BridgeTailscale", "BridgeTestKit",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeProcessTests",
            dependencies: ["BridgeProcess", "BridgeTestKit"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeSandboxTests",
            dependencies: ["BridgeSandbox", "BridgeProcess"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeHTTPTests",
            dependencies: ["BridgeHTTP", "BridgeRPC", .product(name: "HTTPTypes", package: "swift-http-types")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeConfigTests",
            dependencies: [
                "BridgeConfig", "BridgeServer", "BridgeTerminal", "BridgeTestKit", "BridgeWorkspace",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "OABridgeCLITests",
            dependencies: [
                "oa-bridge", "BridgeConfig", "BridgePairing", "BridgePairingUI", "BridgeServer", "BridgeClient", "BridgeDiscovery",
                "BridgeDiagnostics", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeClientTests",
            dependencies: [
                "BridgeClient", "BridgeDiscovery", "BridgeRPC", "BridgeTLS", "BridgeDPoP", "BridgeTestKit", "BridgeTime",
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BridgeServerTests",
            dependencies: [
                "BridgeServer",
                "BridgePairingWire",
                "BridgeSessionStore",
                "BridgeTestKit",
                "BridgeDiscovery",
                "BridgeWebApp",
                "BridgePairing",
                "BridgePairingUI",
                "BridgeClient",
                "BridgeRPC",
                "BridgeACP",
                "BridgeTime",
                "BridgeWorkspace",
                "BridgeTailscale",
                "BridgeHTTP",
                "BridgeSandbox",
                "BridgeTerminal",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                "BridgeWebSocketDeflate",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                "BridgeTLS",
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
