//! The compact (ribbon) form of a closed hour: the fewest filter bytes per ID, at the
//! precision the caller asks for. Either form decodes ([`crate::wire::decode_compact`]):
//! the `BCR1` body or its JSON document.

use super::fetch::check;
use super::{Client, ClientError, Result};
use crate::bloom::Ribbon;
use crate::hour::Hour;

impl Client {
    /// Fetches a closed hour as a ribbon filter, at the server's target false-positive
    /// rate or at `fpp` (rounded down to a power of two, 2^-4 to 2^-24).
    ///
    /// ```no_run
    /// # async fn demo(client: bloomcast::client::Client) -> Result<(), bloomcast::client::ClientError> {
    /// let hour = bloomcast::hour::Hour::parse_flexible("2008-09-03T13").unwrap();
    /// let filter = client.ribbon(hour, Some(0.001)).await?;
    /// assert!(filter.fpp() <= 0.001);
    /// let maybe_changed = filter.contains_id("flickr:12345");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ClientError::Status`] 406 for the open hour (it has no compact form yet), 400
    /// for an `fpp` out of range, as [`Client::filter`] otherwise; a body that is not a
    /// ribbon is a protocol error.
    pub async fn ribbon(&self, hour: Hour, fpp: Option<f64>) -> Result<Ribbon> {
        let mut path = format!("{}.ribbon", hour.path());
        if let Some(p) = fpp {
            path.push_str(&format!("?fpp={p:e}"));
        }
        let response = check(self.send(self.get(&path)).await?).await?;
        let body = self.body(response, None).await?;
        crate::wire::decode_compact(&body)
            .map(|(_, ribbon)| ribbon)
            .map_err(|e| ClientError::Protocol(format!("{path}: {e}")))
    }
}
