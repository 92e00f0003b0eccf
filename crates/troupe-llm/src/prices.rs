//! What model calls cost: a price table per model, in US dollars per
//! million tokens, with shipped defaults for common models and entries of
//! the user's own in `troupe.toml`:
//!
//! ```toml
//! [prices."openai:gpt-4o-mini"]   # a spec, or a model name alone
//! input_per_mtok = 0.15
//! output_per_mtok = 0.60
//! cached_input_per_mtok = 0.075  # optional; default: the input price
//! ```
//!
//! The defaults are the providers' list prices as troupe knew them
//! ([`PRICES_DATED`]); prices change, so a project that bills by them
//! should set its own. A model without a price has no cost (`None`), never
//! a guessed one.

use crate::Usage;
use std::collections::BTreeMap;

/// When the shipped prices were taken from the providers' price pages.
pub const PRICES_DATED: &str = "2025-10";

/// One model's prices, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// Input tokens read from the prompt cache.
    pub cached_input_per_mtok: f64,
}

impl Price {
    const fn new(input: f64, output: f64, cached: f64) -> Price {
        Price {
            input_per_mtok: input,
            output_per_mtok: output,
            cached_input_per_mtok: cached,
        }
    }

    /// The cost of `usage`, in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        (fresh as f64 * self.input_per_mtok
            + cached as f64 * self.cached_input_per_mtok
            + usage.output_tokens as f64 * self.output_per_mtok)
            / 1e6
    }
}

/// Shipped list prices (see [`PRICES_DATED`]), by model name.
const DEFAULTS: &[(&str, Price)] = &[
    ("gpt-4o-mini", Price::new(0.15, 0.60, 0.075)),
    ("gpt-4o", Price::new(2.50, 10.00, 1.25)),
    ("gpt-4.1", Price::new(2.00, 8.00, 0.50)),
    ("gpt-4.1-mini", Price::new(0.40, 1.60, 0.10)),
    ("gpt-4.1-nano", Price::new(0.10, 0.40, 0.025)),
    ("gpt-5", Price::new(1.25, 10.00, 0.125)),
    ("gpt-5-mini", Price::new(0.25, 2.00, 0.025)),
    ("o4-mini", Price::new(1.10, 4.40, 0.275)),
    ("claude-sonnet-4-5", Price::new(3.00, 15.00, 0.30)),
    ("claude-sonnet-4", Price::new(3.00, 15.00, 0.30)),
    ("claude-haiku-4-5", Price::new(1.00, 5.00, 0.10)),
    ("claude-opus-4-1", Price::new(15.00, 75.00, 1.50)),
];

/// `-2024-08-06`, `-20250929`, `-latest`: a dated snapshot (or alias) of a
/// model, not another model (`gpt-4o-mini` is not a `gpt-4o`).
fn is_snapshot_suffix(rest: &str) -> bool {
    rest == "-latest"
        || rest.strip_prefix('-').is_some_and(|d| {
            d.starts_with(|c: char| c.is_ascii_digit())
                && d.chars().all(|c| c.is_ascii_digit() || c == '-')
        })
}

/// The price table: the user's entries over the shipped ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices {
    /// `[prices."KEY"]` of `troupe.toml`: a spec (`openai:gpt-4o-mini`) or
    /// a model name (`gpt-4o-mini`).
    pub custom: BTreeMap<String, Price>,
}

impl Prices {
    /// The price of the model a call was answered by (`openai:gpt-4o-mini`,
    /// `anthropic:claude-sonnet-4-5-20250929`, …): the user's entry for
    /// the spec, then for the model name, then the shipped price of the
    /// longest known model name the model starts with (so dated snapshots
    /// of a model cost what the model does).
    pub fn of(&self, spec: &str) -> Option<Price> {
        let model = spec.split_once(':').map_or(spec, |(_, m)| m);
        if let Some(p) = self.custom.get(spec).or_else(|| self.custom.get(model)) {
            return Some(*p);
        }
        if spec.starts_with("mock") || spec.starts_with("scripted") {
            return None;
        }
        DEFAULTS
            .iter()
            .filter(|(name, _)| {
                model == *name || model.strip_prefix(name).is_some_and(is_snapshot_suffix)
            })
            .max_by_key(|(name, _)| name.len())
            .map(|(_, p)| *p)
    }

    /// The cost of a call answered by `spec` with `usage`.
    pub fn cost(&self, spec: &str, usage: Option<&Usage>) -> Option<f64> {
        Some(self.of(spec)?.cost(usage?))
    }

    /// Reads `[prices]` of `troupe.toml`.
    pub(crate) fn parse(table: &toml::Value) -> Result<Prices, String> {
        let table = table
            .as_table()
            .ok_or("`prices` must be a table: [prices.\"MODEL\"]")?;
        let mut custom = BTreeMap::new();
        for (key, entry) in table {
            let ctx = format!("[prices.{key:?}]");
            let entry = entry
                .as_table()
                .ok_or_else(|| format!("{ctx} must be a table"))?;
            let number = |k: &str| -> Result<Option<f64>, String> {
                match entry.get(k) {
                    None => Ok(None),
                    Some(v) => {
                        let n = v
                            .as_float()
                            .or_else(|| v.as_integer().map(|i| i as f64))
                            .ok_or_else(|| format!("{ctx} {k} must be a number"))?;
                        if !n.is_finite() || n < 0.0 {
                            return Err(format!("{ctx} {k} must be a price of 0 or more"));
                        }
                        Ok(Some(n))
                    }
                }
            };
            for k in entry.keys() {
                if !matches!(
                    k.as_str(),
                    "input_per_mtok" | "output_per_mtok" | "cached_input_per_mtok"
                ) {
                    return Err(format!(
                        "{ctx}: unknown key `{k}` (input_per_mtok, output_per_mtok, cached_input_per_mtok)"
                    ));
                }
            }
            let input =
                number("input_per_mtok")?.ok_or_else(|| format!("{ctx} needs input_per_mtok"))?;
            let output =
                number("output_per_mtok")?.ok_or_else(|| format!("{ctx} needs output_per_mtok"))?;
            let cached = number("cached_input_per_mtok")?.unwrap_or(input);
            custom.insert(key.clone(), Price::new(input, output, cached));
        }
        Ok(Prices { custom })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, cached: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cached_input_tokens: cached,
        }
    }

    #[test]
    fn costs_follow_the_table() {
        let p = Prices::default();
        // 1M fresh input and 1M output tokens of gpt-4o-mini: $0.15 + $0.60.
        let c = p.cost("openai:gpt-4o-mini", Some(&usage(1_000_000, 0, 1_000_000)));
        assert!((c.unwrap() - 0.75).abs() < 1e-9, "{c:?}");
        // Cached input is billed at the cached price.
        let c = p.cost("openai:gpt-4o-mini", Some(&usage(1_000_000, 1_000_000, 0)));
        assert!((c.unwrap() - 0.075).abs() < 1e-9, "{c:?}");
        // A dated snapshot costs what its model does; another model does not.
        assert_eq!(
            p.of("anthropic:claude-sonnet-4-5-20250929"),
            p.of("claude-sonnet-4-5")
        );
        assert_ne!(p.of("openai:gpt-4o-mini"), p.of("openai:gpt-4o"));
        assert_eq!(p.of("openai:gpt-4o-minimal"), None);
        assert_eq!(p.of("openai:gpt-4o-2024-08-06"), p.of("gpt-4o"));
        // Unknown models and the mock have no cost, not a guessed one.
        assert_eq!(p.cost("ollama:qwen2.5:7b", Some(&usage(10, 0, 10))), None);
        assert_eq!(p.cost("mock", Some(&usage(10, 0, 10))), None);
        assert_eq!(p.cost("openai:gpt-4o", None), None);
    }

    #[test]
    fn the_users_entries_win_and_are_checked() {
        let table: toml::Value = toml::from_str(
            "[\"openai:gpt-4o\"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n[\"qwen2.5:7b\"]\ninput_per_mtok = 0\noutput_per_mtok = 0\n",
        )
        .unwrap();
        let p = Prices::parse(&table).unwrap();
        assert_eq!(p.of("openai:gpt-4o").unwrap().input_per_mtok, 1.0);
        assert_eq!(p.of("openai:gpt-4o").unwrap().cached_input_per_mtok, 1.0);
        assert_eq!(
            p.cost("ollama:qwen2.5:7b", Some(&usage(5, 0, 5))),
            Some(0.0)
        );
        for bad in [
            "[m]\ninput_per_mtok = -1\noutput_per_mtok = 1\n",
            "[m]\ninput_per_mtok = 1\n",
            "[m]\ninput_per_mtok = 1\noutput_per_mtok = 1\nper_call = 3\n",
            "[m]\ninput_per_mtok = \"cheap\"\noutput_per_mtok = 1\n",
        ] {
            let t: toml::Value = toml::from_str(bad).unwrap();
            assert!(Prices::parse(&t).is_err(), "{bad}");
        }
    }
}
