//! What every built-in workload declares, so that the command line, the
//! `list` output and benchlab's spec validation come from one place.

use crate::report::Entry;
use std::collections::BTreeMap;

pub struct OptionSpec {
    pub name: &'static str,
    pub default: &'static str,
    pub help: &'static str,
}

pub struct MetricSpec {
    pub name: &'static str,
    pub unit: &'static str,
    pub direction: &'static str,
    pub help: &'static str,
}

pub trait Workload: Sync {
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// Bumped whenever the work changes: results of different versions are never compared.
    fn version(&self) -> u32;
    fn options(&self) -> &'static [OptionSpec];
    fn metrics(&self) -> &'static [MetricSpec];
    /// The CPU suite's section (crypto, integer, floating_point); None outside the suite.
    fn section(&self) -> Option<&'static str> {
        None
    }
    /// What one unit of `items_per_second` is, where the workload defines it.
    fn work_unit(&self) -> Option<&'static str> {
        None
    }
    /// Rounds a run does by default, where the workload has rounds (the CPU suite).
    fn default_iterations(&self) -> Option<u64> {
        None
    }
    /// How the work may be spread over threads (the CPU suite: copies, and shared where a task splits).
    fn modes(&self) -> &'static [&'static str] {
        &[]
    }
    fn run(&self, opts: &Options) -> Result<Vec<Entry>, String>;
    /// The run reported in the Android latency test's JSON shape, for the
    /// workloads that reproduce it; None for the others.
    fn run_android(&self, _opts: &Options) -> Option<Result<serde_json::Value, String>> {
        None
    }
}

/// Parsed option values of one invocation, with typed accessors that turn a
/// bad value into a message naming the option.
pub struct Options {
    pub values: BTreeMap<String, String>,
}

impl Options {
    pub fn u64(&self, name: &str) -> Result<u64, String> {
        let raw = self.values.get(name).ok_or_else(|| format!("option --{name} is missing"))?;
        let cleaned = raw.replace('_', "");
        let (digits, scale) = match cleaned.chars().last() {
            Some('k') | Some('K') => (&cleaned[..cleaned.len() - 1], 1024),
            Some('m') | Some('M') => (&cleaned[..cleaned.len() - 1], 1024 * 1024),
            Some('g') | Some('G') => (&cleaned[..cleaned.len() - 1], 1024 * 1024 * 1024),
            _ => (cleaned.as_str(), 1),
        };
        digits
            .parse::<u64>()
            .ok()
            .and_then(|v| v.checked_mul(scale))
            .ok_or_else(|| format!("option --{name}: '{raw}' is not a non-negative integer"))
    }

    /// One of a fixed set of words.
    pub fn choice<'a>(&self, name: &str, allowed: &[&'a str]) -> Result<&'a str, String> {
        let raw = self.values.get(name).ok_or_else(|| format!("option --{name} is missing"))?;
        allowed
            .iter()
            .find(|a| **a == raw.as_str())
            .copied()
            .ok_or_else(|| format!("option --{name}: '{raw}' is not one of {}", allowed.join(", ")))
    }

    /// An integer that must lie in [lo, hi].
    pub fn bounded(&self, name: &str, lo: u64, hi: u64) -> Result<u64, String> {
        let v = self.u64(name)?;
        if v < lo || v > hi {
            return Err(format!("option --{name}: {v} is outside {lo}..={hi}"));
        }
        Ok(v)
    }
}

/// FNV-1a over u64 words: a stable, dependency-free digest for checksums
/// that must not change between builds (std's hashers are not guaranteed to).
#[derive(Clone, Copy)]
pub struct Digest(pub u64);

impl Digest {
    pub fn new() -> Self {
        Digest(0xcbf2_9ce4_8422_2325)
    }
    pub fn word(&mut self, w: u64) {
        for b in w.to_le_bytes() {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> Options {
        Options { values: pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() }
    }

    #[test]
    fn integers_accept_suffixes_and_underscores() {
        let o = opts(&[("a", "256k"), ("b", "1_000"), ("c", "2M"), ("d", "3g")]);
        assert_eq!(o.u64("a").unwrap(), 256 * 1024);
        assert_eq!(o.u64("b").unwrap(), 1000);
        assert_eq!(o.u64("c").unwrap(), 2 * 1024 * 1024);
        assert_eq!(o.u64("d").unwrap(), 3 << 30);
    }

    #[test]
    fn bad_and_out_of_range_values_name_the_option() {
        let o = opts(&[("threads", "-1"), ("ops", "0")]);
        assert!(o.u64("threads").unwrap_err().contains("--threads"));
        assert!(o.bounded("ops", 1, 10).unwrap_err().contains("outside"));
    }

    #[test]
    fn digest_is_fnv1a() {
        let mut d = Digest::new();
        d.word(0);
        // FNV-1a of eight zero bytes
        assert_eq!(d.hex(), "a8c7f832281a39c5");
    }
}
