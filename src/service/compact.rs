//! Compact (ribbon) views of closed hours: built from the hour's verified keys once per
//! precision, after the hour is sealed, and kept in the render cache beside the v1
//! representations. The open hour has no compact form: its keys still change, and a
//! static structure cannot take more.

use super::{Result, Service, ServiceError, View};
use crate::bloom::Ribbon;
use crate::hour::Hour;
use crate::render::{render_ribbon, Repr};
use crate::wire::Meta;
use std::sync::Arc;

impl Service {
    /// A closed hour as a ribbon filter of `2^-r` false-positive rate.
    ///
    /// # Errors
    /// As [`Service::view`] for the hour; `NotAcceptable` for the open hour; a filter
    /// error for `r` outside `1..=32`.
    pub async fn compact_view(&self, hour: Hour, r: u32) -> Result<View> {
        let mut now = self.current_hour();
        if hour > now {
            self.read_marks_if_due().await?;
            now = self.current_hour();
        }
        self.check(hour, now)?;
        if hour == now {
            return Err(ServiceError::NotAcceptable(format!(
                "{hour} is still open: its compact form exists once it closes; \
                 fetch it as .bin, .hex or .json until then"
            )));
        }
        let view = |rendered, complete: bool| View {
            rendered,
            open_until: (!complete).then(|| now.end()),
            prev: (hour.prev() >= self.earliest(now)).then(|| hour.prev().path()),
            next: Some(hour.next().path()),
            open_hour: None,
        };
        let key = (hour.index(), hour.index(), r);
        if let Some(rendered) = self.cache.get_compact(&key) {
            return Ok(view(rendered, true));
        }
        // Seals the hour if needed and says whether it is durably closed.
        let (_, complete) = self.closed_view(hour, Repr::Bin).await?;
        let keys = self.closed_keys(hour).await?;
        let count = keys.len() as u64;
        let ribbon = tokio::task::spawn_blocking(move || Ribbon::build(&keys, r)).await??;
        let meta = Meta::hour(hour.rfc3339(), complete, count);
        let rendered = Arc::new(render_ribbon(&meta, &ribbon));
        if complete {
            self.cache.insert_compact(key, rendered.clone());
        }
        Ok(view(rendered, complete))
    }
}
