//! What the WebSub hub keeps (`crate::websub`): its subscriptions, shared by every node
//! of a fleet and kept across restarts, and which node delivers each sealed hour.

/// A subscriber's callback for a topic, with its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// The subscriber's URL, as it gave it (`hub.callback`).
    pub callback: String,
    /// The feed's URL it follows (`hub.topic`).
    pub topic: String,
    /// `hub.secret`, the key of the deliveries' `X-Hub-Signature`; kept as given, since
    /// the hub signs with it.
    pub secret: Option<String>,
    /// When the lease runs out, Unix seconds.
    pub expires: i64,
}
