//! What every built-in workload declares, so that the command line, the
//! `list` output and benchlab's spec validation come from one place.

use crate::protocol::Said;
use crate::report::Entry;
use crate::workloads::{ChannelError, ChildError, MapError};
use std::collections::BTreeMap;

pub struct OptionSpec {
    pub name: &'static str,
    pub default: &'static str,
    pub help: &'static str,
    pub kind: Kind,
}

/// The values an option takes, declared once beside it: the probe parses and bounds every
/// value by it, and `list --format json` hands it to benchlab, which refuses a bad value in a
/// spec before anything runs.
#[derive(Clone, Copy)]
pub enum Kind {
    /// a count in min..=max
    Int { min: u64, max: u64 },
    /// bytes in min..=max; k, m and g suffixes (powers of 1024) accepted
    Size { min: u64, max: u64 },
    /// 0 or 1
    Flag,
    /// one of a fixed set of words
    Choice(&'static [&'static str]),
    /// free text: a path, a list
    Text,
}

/// A seed: any 64-bit number.
pub const SEED: Kind = Kind::Int {
    min: 0,
    max: u64::MAX,
};

impl Kind {
    /// How `list --format json` describes the kind.
    pub fn describe(&self) -> serde_json::Value {
        match *self {
            Kind::Int { min, max } => serde_json::json!({"kind": "int", "min": min, "max": max}),
            Kind::Size { min, max } => serde_json::json!({"kind": "size", "min": min, "max": max}),
            Kind::Flag => serde_json::json!({"kind": "bool", "min": 0, "max": 1}),
            Kind::Choice(words) => serde_json::json!({"kind": "choice", "choices": words}),
            Kind::Text => serde_json::json!({"kind": "text"}),
        }
    }
}

pub struct MetricSpec {
    pub name: &'static str,
    pub unit: &'static str,
    pub direction: &'static str,
    pub help: &'static str,
}

/// What a workload declares about itself, in one value rather than a getter each.
#[derive(Clone, Copy)]
pub struct About {
    pub name: &'static str,
    pub description: &'static str,
    /// Bumped whenever the work changes: results of different versions are never compared.
    pub version: u32,
    pub options: &'static [OptionSpec],
    pub metrics: &'static [MetricSpec],
}

pub trait Workload: Sync {
    fn about(&self) -> About;
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
    /// Option values that make a short try of it (`benchlab run SPEC --quick`): the app cycle's
    /// 10 iterations where the study runs 150.
    fn quick_options(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// How the work may be spread over threads (the CPU suite: copies, and shared where a task splits).
    fn modes(&self) -> &'static [&'static str] {
        &[]
    }
    /// Whether the options can run here, with the CPUs this process may use, without doing the
    /// work: `--check` asks only this, so benchlab refuses before running (too few CPUs to pin
    /// two pairs apart, say). Every run checks it first too.
    fn check(&self, _opts: &Options) -> Result<(), WorkloadError> {
        Ok(())
    }
    /// The run's entries; what it has to say besides (notes, findings) goes to `said`.
    fn run(&self, opts: &Options, said: &mut Said) -> Result<Vec<Entry>, WorkloadError>;
    /// The run reported in the Android latency test's JSON shape, for the
    /// workloads that reproduce it; None for the others.
    fn run_android(
        &self,
        _opts: &Options,
        _said: &mut Said,
    ) -> Option<Result<serde_json::Value, WorkloadError>> {
        None
    }
}

/// A bad option value, named: the probe prints it after the workload's name, and `--check`
/// hands it to benchlab as the `error` field (docs/protocol.md), which shows it as it is.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum OptionError {
    #[error("no option --{0}")]
    Unknown(String),
    #[error("option --{0} is missing")]
    Missing(String),
    #[error("option --{0} is not a number")]
    NotNumber(String),
    #[error("option --{0} is not a choice")]
    NotChoice(String),
    #[error("option --{name}: '{raw}' is not a non-negative integer")]
    NotInteger { name: String, raw: String },
    #[error("option --{name}: {value} is outside {lo}..={hi}")]
    Outside {
        name: String,
        value: u64,
        lo: u64,
        hi: u64,
    },
    #[error("option --{name}: '{raw}' is not one of {}", .allowed.join(", "))]
    NotOneOf {
        name: String,
        raw: String,
        allowed: &'static [&'static str],
    },
}

/// Why a workload refused or failed. The probe prints it after the workload's name, and
/// `--check` hands it to benchlab as the `error` field (docs/protocol.md): its text is part of
/// the protocol, so every variant displays exactly the message it carries.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A bad option value.
    #[error(transparent)]
    Option(#[from] OptionError),
    /// Memory the kernel would not map.
    #[error(transparent)]
    Map(#[from] MapError),
    /// A child process that could not be made or did not end cleanly.
    #[error(transparent)]
    Child(#[from] ChildError),
    /// An IPC mechanism that failed to set up or carry a message.
    #[error(transparent)]
    Channel(#[from] ChannelError),
    /// A system call or file operation that failed, with what it was doing.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// This machine cannot run it as asked (too few CPUs, no binder device, no toolchain, no
    /// privilege): what `check` refuses with, before any work.
    #[error("{0}")]
    Refused(String),
    /// The work itself went wrong: a wrong result, a library's error, a protocol broken.
    #[error("{0}")]
    Failed(String),
}

/// Tests compare a result with the one expected: two errors are equal when they say the same.
#[cfg(test)]
impl PartialEq for WorkloadError {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl WorkloadError {
    /// `what` failed with the calling thread's last OS error.
    pub fn last_os(what: impl Into<String>) -> WorkloadError {
        WorkloadError::io(what, std::io::Error::last_os_error())
    }

    /// `what` failed with `source`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> WorkloadError {
        WorkloadError::Io {
            what: what.into(),
            source,
        }
    }
}

/// `WorkloadError::Failed` with a `format!` reason: the work went wrong.
macro_rules! failed {
    ($($arg:tt)*) => {
        $crate::workload::WorkloadError::Failed(format!($($arg)*))
    };
}

/// `WorkloadError::Refused` with a `format!` reason: this machine cannot run it as asked.
macro_rules! refused {
    ($($arg:tt)*) => {
        $crate::workload::WorkloadError::Refused(format!($($arg)*))
    };
}

pub(crate) use {failed, refused};

/// Parsed option values of one invocation, each checked against its declared kind, with
/// typed accessors that turn a bad value into a message naming the option.
pub struct Options {
    pub values: BTreeMap<String, String>,
    specs: &'static [OptionSpec],
}

impl Options {
    /// The given values over the declared defaults, every one checked against its kind.
    pub fn parse(
        specs: &'static [OptionSpec],
        given: BTreeMap<String, String>,
    ) -> Result<Options, OptionError> {
        let mut values: BTreeMap<String, String> = specs
            .iter()
            .map(|o| (o.name.to_string(), o.default.to_string()))
            .collect();
        for (name, value) in given {
            if !values.contains_key(&name) {
                return Err(OptionError::Unknown(name));
            }
            values.insert(name, value);
        }
        let opts = Options { values, specs };
        for o in specs {
            match o.kind {
                Kind::Int { .. } | Kind::Size { .. } | Kind::Flag => opts.int(o.name).map(drop)?,
                Kind::Choice(_) => opts.choice(o.name).map(drop)?,
                Kind::Text => {}
            }
        }
        Ok(opts)
    }

    fn kind(&self, name: &str) -> Result<Kind, OptionError> {
        self.specs
            .iter()
            .find(|o| o.name == name)
            .map(|o| o.kind)
            .ok_or_else(|| OptionError::Unknown(name.into()))
    }

    /// A count, a size or a flag, within its declared bounds.
    pub fn int(&self, name: &str) -> Result<u64, OptionError> {
        let (lo, hi) = match self.kind(name)? {
            Kind::Int { min, max } | Kind::Size { min, max } => (min, max),
            Kind::Flag => (0, 1),
            _ => return Err(OptionError::NotNumber(name.into())),
        };
        let v = self.u64(name)?;
        if v < lo || v > hi {
            return Err(OptionError::Outside {
                name: name.into(),
                value: v,
                lo,
                hi,
            });
        }
        Ok(v)
    }

    pub fn flag(&self, name: &str) -> Result<bool, OptionError> {
        self.int(name).map(|v| v == 1)
    }

    /// Free text, as given.
    pub fn text(&self, name: &str) -> &str {
        self.values.get(name).map_or("", String::as_str)
    }

    fn u64(&self, name: &str) -> Result<u64, OptionError> {
        let raw = self
            .values
            .get(name)
            .ok_or_else(|| OptionError::Missing(name.into()))?;
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
            .ok_or_else(|| OptionError::NotInteger {
                name: name.into(),
                raw: raw.clone(),
            })
    }

    /// One of the option's declared words.
    pub fn choice(&self, name: &str) -> Result<&'static str, OptionError> {
        let Kind::Choice(allowed) = self.kind(name)? else {
            return Err(OptionError::NotChoice(name.into()));
        };
        let raw = self
            .values
            .get(name)
            .ok_or_else(|| OptionError::Missing(name.into()))?;
        allowed
            .iter()
            .find(|a| **a == raw.as_str())
            .copied()
            .ok_or_else(|| OptionError::NotOneOf {
                name: name.into(),
                raw: raw.clone(),
                allowed,
            })
    }

    /// A number within its declared bounds and within [lo, hi], for a bound that depends on
    /// another option or on the task (max-payload from min-payload).
    pub fn bounded(&self, name: &str, lo: u64, hi: u64) -> Result<u64, OptionError> {
        let v = self.int(name)?;
        if v < lo || v > hi {
            return Err(OptionError::Outside {
                name: name.into(),
                value: v,
                lo,
                hi,
            });
        }
        Ok(v)
    }
}

/// FNV-1a over u64 words: a stable, dependency-free digest for checksums
/// that must not change between builds (std's hashers are not guaranteed to).
#[derive(Clone, Copy)]
pub struct Digest(pub u64);

impl Default for Digest {
    fn default() -> Self {
        Digest::new()
    }
}

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

    const SIZE: Kind = Kind::Size {
        min: 0,
        max: u64::MAX,
    };
    static SPECS: &[OptionSpec] = &[
        OptionSpec {
            name: "a",
            default: "0",
            help: "",
            kind: SIZE,
        },
        OptionSpec {
            name: "b",
            default: "0",
            help: "",
            kind: SIZE,
        },
        OptionSpec {
            name: "c",
            default: "0",
            help: "",
            kind: SIZE,
        },
        OptionSpec {
            name: "d",
            default: "0",
            help: "",
            kind: SIZE,
        },
        OptionSpec {
            name: "threads",
            default: "1",
            help: "",
            kind: Kind::Int { min: 1, max: 4096 },
        },
        OptionSpec {
            name: "ops",
            default: "1",
            help: "",
            kind: Kind::Int { min: 1, max: 10 },
        },
        OptionSpec {
            name: "mode",
            default: "copies",
            help: "",
            kind: Kind::Choice(&["copies", "shared"]),
        },
    ];

    fn opts(pairs: &[(&str, &str)]) -> Result<Options, OptionError> {
        Options::parse(
            SPECS,
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn integers_accept_suffixes_and_underscores() {
        let o = opts(&[("a", "256k"), ("b", "1_000"), ("c", "2M"), ("d", "3g")]).unwrap();
        assert_eq!(o.int("a").unwrap(), 256 * 1024);
        assert_eq!(o.int("b").unwrap(), 1000);
        assert_eq!(o.int("c").unwrap(), 2 * 1024 * 1024);
        assert_eq!(o.int("d").unwrap(), 3 << 30);
        assert_eq!(o.choice("mode").unwrap(), "copies");
    }

    #[test]
    fn bad_and_out_of_range_values_name_the_option() {
        assert!(opts(&[("threads", "-1")])
            .err()
            .unwrap()
            .to_string()
            .contains("--threads"));
        assert!(opts(&[("ops", "11")])
            .err()
            .unwrap()
            .to_string()
            .contains("outside 1..=10"));
        assert!(opts(&[("threads", "0")])
            .err()
            .unwrap()
            .to_string()
            .contains("outside 1..=4096"));
        assert!(opts(&[("mode", "both")])
            .err()
            .unwrap()
            .to_string()
            .contains("not one of copies, shared"));
        assert!(opts(&[("colour", "1")])
            .err()
            .unwrap()
            .to_string()
            .contains("no option --colour"));
        assert!(opts(&[])
            .unwrap()
            .bounded("ops", 2, 10)
            .unwrap_err()
            .to_string()
            .contains("outside 2..=10"));
    }

    #[test]
    fn workload_errors_say_their_message_and_keep_their_cause() {
        let cause = || std::io::Error::from_raw_os_error(libc::EPERM);
        let io = WorkloadError::io("sched_setscheduler", cause());
        assert_eq!(io.to_string(), format!("sched_setscheduler: {}", cause()));
        assert!(std::error::Error::source(&io).is_some());
        let refusal = refused!(
            "--placement {} needs {} CPUs this run may use",
            "different",
            2
        );
        assert!(matches!(refusal, WorkloadError::Refused(_)));
        assert_eq!(
            refusal.to_string(),
            "--placement different needs 2 CPUs this run may use"
        );
        assert_eq!(
            failed!("round trip 3 came back altered").to_string(),
            "round trip 3 came back altered"
        );
        let bad = WorkloadError::from(opts(&[("ops", "11")]).err().unwrap());
        assert!(matches!(
            bad,
            WorkloadError::Option(OptionError::Outside { .. })
        ));
        assert_eq!(bad.to_string(), "option --ops: 11 is outside 1..=10");
    }

    #[test]
    fn digest_is_fnv1a() {
        let mut d = Digest::new();
        d.word(0);
        // FNV-1a of eight zero bytes
        assert_eq!(d.hex(), "a8c7f832281a39c5");
    }
}
