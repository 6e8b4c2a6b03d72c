// swift-tools-version:6.1
// Minimal reproduction: every WebSocket upgraded through a Hummingbird router keeps its request context (and the
// logger, channel address and whatever else the context holds) alive after the connection closed.
// Not part of oa-bridge's products; see README.md.

import PackageDescription

let package = Package(
    name: "hbws-context-cycle",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", exact: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", exact: "2.8.1"),
    ],
    targets: [
        .executableTarget(
            name: "repro",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            ]
        ),
    ]
)
