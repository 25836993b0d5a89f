//! `ipc.<mechanism>.latency` is Android's binder latency test (schd-dbg) on
//! Linux mechanisms. `--pair N` client/server process pairs run at once; each
//! iteration a client makes one transaction as a SCHED_OTHER caller and one
//! as a SCHED_FIFO caller (switched outside the timed region; the server stays
//! SCHED_OTHER, since no Linux mechanism passes a caller's priority on). Every
//! transaction is timed on its own against `--deadline-us`; the server reports
//! the CPU it handled the request on, so "same CPU" (Android's SYNC) is
//! checked per transaction. Percentiles come from the exact samples (ns), not
//! from buckets; each half's samples are also sent whole as a histogram
//! (`crate::histogram`, in the protocol's `histograms`), built after timing.
//!
//! One job per module: `config` (options), `wire` (what crosses between the
//! processes), `ends` (server and client loops), `pairs` (forking and reaping
//! a run), `stats` (a half's numbers), `output` (Google Benchmark entries and
//! the Android test's JSON, `--format android`).

mod config;
mod ends;
mod output;
mod pairs;
mod stats;
mod wire;

use super::channel::{Mechanism, MECHANISMS};
use super::placement_cpus;
use crate::protocol::Said;
use crate::report::Entry;
use crate::workload::{About, Options, Workload, WorkloadError};
use config::{Config, METRICS, OPTIONS};
use serde_json::Value;

per_mechanism!(Latency, "latency");

impl Workload for Latency {
    fn about(&self) -> About {
        About {
            name: self.name,
            description: "client/server pairs, one SCHED_OTHER and one SCHED_FIFO transaction per iteration, against a deadline (binder latency test)",
            version: 2, // 2: cpu_time per half (1 gave both halves the figure over both)
            options: OPTIONS,
            metrics: METRICS,
        }
    }
    fn check(&self, opts: &Options) -> Result<(), WorkloadError> {
        let config = Config::parse(opts)?;
        placement_cpus(config.placement, config.pairs).map(drop)
    }
    fn run(&self, opts: &Options, said: &mut Said) -> Result<Vec<Entry>, WorkloadError> {
        let (config, outcome) = self.measure(opts, said)?;
        Ok(outcome.entries(self.name, &config, said))
    }
    fn run_android(&self, opts: &Options, said: &mut Said) -> Option<Result<Value, WorkloadError>> {
        Some(
            self.measure(opts, said)
                .map(|(config, outcome)| outcome.android(self.mechanism.name, &config, said)),
        )
    }
}
