extension BridgeMethod {
    /// Notification, to a seed-dialect client in place of an agent notification whose keys would collide in snake_case
    /// (`fooBar` and `foo_bar` in one object): `{"sessionId"?, "method", "_meta": {"seq"}?, "error"}`.
    ///
    /// `method` is the notification withheld, `_meta.seq` its sequence number when it was a `session/update` (so the
    /// client knows which update it did not get), `error` a JSON-RPC error object (-32603) whose `data` names the
    /// `key` and its `sources`. Official (camelCase) clients get the notification itself.
    public static let notificationWithheld = "_oa/notification_withheld"
}
