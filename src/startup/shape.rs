//! The settings that shape an hour's bytes in cluster mode (`capacity`, `target_fpp`):
//! recorded once for the cluster in PostgreSQL by the first node to start; a node whose
//! own values differ says so and follows the cluster's ([`follow_cluster`]).
//! `bloomcast cluster-settings set` changes them for every node from the next hour on
//! ([`set_cluster`]): every node seals each hour with the values in effect for it.

use super::StartError;
use crate::clock::Clock;
use crate::config::{ConfigError, Settings};
use crate::hour::Hour;
use crate::store::{HourShape, PgLink, PgStore, Store};
use secrecy::ExposeSecret;

/// The settings that shape hours, as `settings` configure them.
pub fn local(settings: &Settings) -> HourShape {
    HourShape {
        capacity: settings.capacity,
        target_fpp: settings.target_fpp,
    }
}

/// The hour shape this node starts with, for the hour `now`: the cluster's recorded one
/// (this node's own, recorded, when it is the first), else its own configuration (the
/// embedded store). Each setting that differs is logged at WARN with both values.
///
/// # Errors
/// Store failures; cluster values this node's configuration cannot take (a `capacity`
/// above its `max_hour_ids`), naming the setting.
pub async fn follow_cluster(
    settings: &Settings,
    store: &dyn Store,
    now: Hour,
) -> Result<HourShape, StartError> {
    let ours = local(settings);
    let Some(cluster) = store.hour_shape(&ours, now).await? else {
        return Ok(ours);
    };
    for (setting, local, cluster) in ours.differences(&cluster) {
        tracing::warn!(setting, local = %local, cluster = %cluster,
            "this node's {setting} is {local} but the cluster's, recorded in PostgreSQL, is {cluster}: \
             building hours with the cluster's {cluster} (change it for every node with \
             `bloomcast cluster-settings set {setting}=VALUE`)");
    }
    checked(settings, &cluster)?;
    Ok(cluster)
}

/// `shape` checked as `settings` with its values would be.
fn checked(settings: &Settings, shape: &HourShape) -> Result<(), ConfigError> {
    let mut with = settings.clone();
    with.capacity = shape.capacity;
    with.target_fpp = shape.target_fpp;
    with.validate()
}

/// What [`set_cluster`] found and left.
#[derive(Debug)]
pub struct ClusterShape {
    /// In effect for the current hour (this configuration's, if none was recorded).
    pub before: HourShape,
    /// In effect from hour `from` on: `before` with any change recorded for a later hour
    /// and then the changes asked.
    pub after: HourShape,
    /// The first hour sealed with `after`: the hour after the current one.
    pub from: Hour,
    /// The changes recorded for hours after the current one, once the changes asked are
    /// recorded: each with its first hour, in order; none that would change nothing.
    pub pending: Vec<(Hour, HourShape)>,
}

/// Applies `changes` (`("capacity", "5000")`, `("target_fpp", "0.005")`) to the
/// cluster's newest recorded hour shape (the one in effect now, or a change already
/// recorded for a later hour) and records the result from the next hour on (the open
/// hour keeps the values it opened with); no changes: only reads it. Every node seals
/// the hours from then on with the new values; a node's open-hour working filter and
/// union sizing take them at its next start.
///
/// # Errors
/// Not in cluster mode; an unknown setting or a value that does not parse or is out of
/// range; store failures.
pub async fn set_cluster(
    settings: &Settings,
    clock: &dyn Clock,
    changes: &[(String, String)],
) -> Result<ClusterShape, StartError> {
    let url = settings.database_url.expose_secret();
    if url.is_empty() {
        return Err(StartError::Config(ConfigError::Invalid {
            name: "database_url",
            message: "cluster-settings needs cluster mode (a PostgreSQL database_url); \
                      a single node's hours are shaped by its own configuration"
                .into(),
        }));
    }
    let link = PgLink::new(url, &settings.database_ca_file)?;
    let store = PgStore::connect(link, &settings.database_schema, clock.current_hour()).await?;
    let now = clock.current_hour();
    let before = store.recorded_hour_shape(&local(settings), now).await?;
    let from = now.next();
    let recorded = store.pending_hour_shapes(now).await?;
    let newest = recorded.last().map_or(before, |(_, shape)| *shape);
    let after = changed(newest, changes)?;
    if !changes.is_empty() && after != newest {
        checked(settings, &after)?;
        store.set_hour_shape(&after, from).await?;
    }
    let pending = store.pending_hour_shapes(now).await?;
    Ok(ClusterShape {
        before,
        after,
        from,
        pending: without_no_ops(before, pending),
    })
}

/// `shape` with `changes` applied.
fn changed(mut shape: HourShape, changes: &[(String, String)]) -> Result<HourShape, StartError> {
    for (name, value) in changes {
        let bad = |message: String| {
            StartError::Config(ConfigError::Invalid {
                name: "cluster-settings",
                message,
            })
        };
        match name.as_str() {
            "capacity" => {
                shape.capacity = value
                    .parse()
                    .map_err(|e| bad(format!("capacity={value}: {e}")))?;
            }
            "target_fpp" => {
                shape.target_fpp = value
                    .parse()
                    .map_err(|e| bad(format!("target_fpp={value}: {e}")))?;
            }
            other => {
                return Err(bad(format!(
                    "{other} is not a cluster-wide setting (capacity, target_fpp)"
                )))
            }
        }
    }
    Ok(shape)
}

/// The pending changes that change something: a change back to the values before it
/// (a `set` undoing one not yet in effect) is left out.
fn without_no_ops(mut last: HourShape, pending: Vec<(Hour, HourShape)>) -> Vec<(Hour, HourShape)> {
    pending
        .into_iter()
        .filter(|(_, shape)| std::mem::replace(&mut last, *shape) != *shape)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(capacity: u64, target_fpp: f64) -> HourShape {
        HourShape {
            capacity,
            target_fpp,
        }
    }

    #[test]
    fn changes_apply_to_the_named_settings_and_refuse_any_other() {
        let base = shape(3000, 0.01);
        let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let after = changed(base, &[pair("target_fpp", "0.005")]).unwrap();
        assert_eq!(after, shape(3000, 0.005));
        let after = changed(
            base,
            &[pair("capacity", "5000"), pair("target_fpp", "0.02")],
        );
        assert_eq!(after.unwrap(), shape(5000, 0.02));
        assert!(changed(base, &[pair("retention_hours", "1")]).is_err());
        assert!(changed(base, &[pair("capacity", "many")]).is_err());
    }

    #[test]
    fn a_pending_change_back_to_the_values_before_it_is_not_shown() {
        let h = Hour::from_index(100);
        let now = shape(3000, 0.01);
        let pending = vec![(h, shape(3000, 0.005)), (h.next(), shape(3000, 0.005))];
        assert_eq!(without_no_ops(now, pending), vec![(h, shape(3000, 0.005))]);
        assert!(without_no_ops(now, vec![(h, now)]).is_empty());
    }
}
