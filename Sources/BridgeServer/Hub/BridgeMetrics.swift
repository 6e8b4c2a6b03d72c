import Metrics

/// The bridge's metrics, through swift-metrics (no-ops until a backend is bootstrapped; `serve`
/// bootstraps swift-prometheus and exposes them at `GET /metrics` on loopback).
enum BridgeMetrics {
    /// Open WebSocket connections.
    static let connections = Gauge(label: "oa_bridge_connections")
    /// WebSocket connections accepted since start.
    static let connectionsTotal = Counter(label: "oa_bridge_connections_total")
    /// Sessions the bridge knows.
    static let sessions = Gauge(label: "oa_bridge_sessions")
    /// Frames received from clients.
    static let messagesIn = Counter(label: "oa_bridge_messages_in_total")
    /// Frames queued to clients.
    static let messagesOut = Counter(label: "oa_bridge_messages_out_total")
    /// Time from a client's request to the agent's answer being sent back.
    static let relayLatency = Timer(label: "oa_bridge_relay_latency_seconds", preferredDisplayUnit: .seconds)
    /// WebSocket upgrades refused (token, network, connection limit).
    static let authFailures = Counter(label: "oa_bridge_upgrade_refusals_total")
}
