//! `bloomcast estimate --intersect A B`: how many IDs two filters hold in common and
//! together, estimated from their bits alone (see [`crate::bloom::Overlap`]).

use super::inspect::{load, RawShape};
use super::CliError;
use crate::bloom::{Filter, FilterError};
use crate::wire::Meta;
use clap::Args;
use serde_json::{json, Value};

/// Estimate |A ∩ B| and |A ∪ B| from two filters of the same shape (m, k, hash).
#[derive(Debug, Args)]
pub struct EstimateArgs {
    /// The two filters: URLs (http://host:port/2008/09/03/13) or files, as `inspect`
    /// reads them.
    #[arg(long, num_args = 2, value_names = ["A", "B"], required = true)]
    intersect: Vec<String>,
    #[command(flatten)]
    raw: RawShape,
    /// Print one JSON object instead of lines.
    #[arg(long)]
    json: bool,
}

impl EstimateArgs {
    /// Loads both filters and prints the estimates.
    ///
    /// # Errors
    /// Anything `inspect` refuses, or two filters of different shapes (both named).
    pub async fn run(self) -> Result<(), CliError> {
        let raw = self.raw.get();
        let (meta_a, a) = load(
            &self.intersect[0],
            raw,
            None,
            crate::client::DEFAULT_FRESHNESS,
        )
        .await?;
        let (meta_b, b) = load(
            &self.intersect[1],
            raw,
            None,
            crate::client::DEFAULT_FRESHNESS,
        )
        .await?;
        let overlap = a.overlap(&b).map_err(|e| match e {
            FilterError::Incompatible { .. } => CliError::Input(format!(
                "cannot intersect filters of different shapes: A {} is {} and B {} is {}; \
                 only filters of the same m, k and hash combine",
                self.intersect[0],
                shape(&a),
                self.intersect[1],
                shape(&b),
            )),
            other => CliError::Input(other.to_string()),
        })?;
        let side = |source: &str, meta: &Option<Meta>, filter: &Filter, estimate: f64| {
            json!({
                "source": source,
                "count": meta.as_ref().map(|m| m.count),
                "estimated_count": estimate.round(),
                "m": filter.m(),
                "k": filter.k(),
                "hash": filter.hash().name(),
                "fill": filter.fill_ratio(),
            })
        };
        // NaN and infinity (saturated filters) become JSON null: nothing can be said.
        let doc = json!({
            "a": side(&self.intersect[0], &meta_a, &a, overlap.a),
            "b": side(&self.intersect[1], &meta_b, &b, overlap.b),
            "union": overlap.union.round(),
            "intersection": overlap.intersection.round(),
            "jaccard": overlap.jaccard(),
        });
        if self.json {
            super::outln!("{doc}")?;
            return Ok(());
        }
        let number = |v: &Value| match v {
            Value::Null => "unknown (saturated filter)".to_owned(),
            other => other.to_string(),
        };
        for (name, key) in [("A", "a"), ("B", "b")] {
            let s = &doc[key];
            let exact = match &s["count"] {
                Value::Null => "unknown (raw file)".to_owned(),
                count => count.to_string(),
            };
            super::outln!(
                "{name}               {}",
                s["source"].as_str().unwrap_or_default()
            )?;
            super::outln!("  count          {exact}")?;
            super::outln!("  estimated      {}", number(&s["estimated_count"]))?;
        }
        super::outln!("shape            m={} k={} {}", a.m(), a.k(), a.hash())?;
        super::outln!("union (est.)     {}", number(&doc["union"]))?;
        super::outln!("intersection     {}", number(&doc["intersection"]))?;
        super::outln!("jaccard          {:.4}", overlap.jaccard())?;
        Ok(())
    }
}

/// A filter's shape as the refusal names it.
fn shape(filter: &Filter) -> String {
    format!(
        "(m={}, k={}, hash={})",
        filter.m(),
        filter.k(),
        filter.hash()
    )
}
