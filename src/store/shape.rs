//! The settings that shape an hour's bytes: how a sealed hour's filter is sized
//! (`target_fpp`) and how the open hour's filter starts (`capacity`). In cluster mode
//! they are recorded once in PostgreSQL, so that every node builds the same bytes.

/// The settings that shape an hour's bytes, as a node uses them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HourShape {
    /// Distinct IDs the open hour's filter is sized for before it grows (the open
    /// hour's bytes, and so its versions and deltas).
    pub capacity: u64,
    /// The false-positive probability a sealed hour's filter is sized within (its bytes).
    pub target_fpp: f64,
}

impl HourShape {
    /// `(setting, local value, cluster value)` of each setting where `self` (a node's
    /// configuration) differs from `cluster`.
    pub fn differences(&self, cluster: &HourShape) -> Vec<(&'static str, String, String)> {
        let mut found = Vec::new();
        if self.capacity != cluster.capacity {
            found.push((
                "capacity",
                self.capacity.to_string(),
                cluster.capacity.to_string(),
            ));
        }
        if self.target_fpp.to_bits() != cluster.target_fpp.to_bits() {
            found.push((
                "target_fpp",
                self.target_fpp.to_string(),
                cluster.target_fpp.to_string(),
            ));
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_each_setting_with_the_local_value_then_the_clusters() {
        let local = HourShape {
            capacity: 3000,
            target_fpp: 0.01,
        };
        assert!(local.differences(&local).is_empty());
        let cluster = HourShape {
            capacity: 5000,
            target_fpp: 0.005,
        };
        assert_eq!(
            local.differences(&cluster),
            vec![
                ("capacity", "3000".to_owned(), "5000".to_owned()),
                ("target_fpp", "0.01".to_owned(), "0.005".to_owned()),
            ]
        );
    }
}
