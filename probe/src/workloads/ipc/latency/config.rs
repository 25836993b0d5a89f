//! The latency test's options, as declared to benchlab and as one run reads them.

use super::super::inheritance::LOCKS;
use super::super::{Ledger, PLACEMENTS};
use super::wire::HEADER;
use crate::workload::{refused, Kind, MetricSpec, OptionSpec, Options, WorkloadError};
use std::time::Duration;

pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec { name: "iterations", default: "2000", help: "iterations per pair (Android's -i); each makes a SCHED_OTHER and a SCHED_FIFO transaction" , kind: Kind::Int { min: 1, max: 1 << 26 } },
    OptionSpec { name: "pair", default: "1", help: "client/server process pairs run at once (Android's -pair)" , kind: Kind::Int { min: 1, max: Ledger::SLOTS as u64 / 2 } },
    OptionSpec { name: "deadline-us", default: "2500", help: "a transaction slower than this misses its deadline (Android's -deadline_us)" , kind: Kind::Int { min: 1, max: 1 << 32 } },
    OptionSpec { name: "payload", default: "32", help: "bytes per message, its 16-byte header included" , kind: Kind::Size { min: HEADER as u64, max: 1 << 20 } },
    OptionSpec { name: "warmup", default: "100", help: "untimed iterations first" , kind: Kind::Int { min: 0, max: 1 << 26 } },
    OptionSpec { name: "placement", default: "unpinned", help: "unpinned, same (client and server on one CPU) or different (a CPU each)" , kind: Kind::Choice(PLACEMENTS) },
    OptionSpec { name: "spin-us", default: "0", help: "spin up to this many microseconds before each blocking receive (0: block)" , kind: Kind::Int { min: 0, max: 1_000_000 } },
    OptionSpec { name: "fifo-priority", default: "1", help: "the SCHED_FIFO caller's priority (1-99)" , kind: Kind::Int { min: 1, max: 99 } },
    OptionSpec { name: "inheritance", default: "pi", help: "the priority-inheritance check's lock: pi (should PASS), plain (shows the inversion: FAIL) or off" , kind: Kind::Choice(LOCKS) },
    OptionSpec { name: "verbose", default: "0", help: "1: print every process's pid, tid, CPU and policy on stderr (Android's -v)" , kind: Kind::Flag },
    OptionSpec { name: "trace", default: "0", help: "1: on the first miss write a trace_marker and stop tracing (Android's -trace)" , kind: Kind::Flag },
    OptionSpec { name: "force", default: "0", help: "1: allow more pairs than CPUs" , kind: Kind::Flag },
    OptionSpec { name: "inject-delay-us", default: "0", help: "the server sleeps this long before replying, every --inject-every iterations (tests deadline counting)" , kind: Kind::Int { min: 0, max: 10_000_000 } },
    OptionSpec { name: "inject-every", default: "10", help: "which iterations get the injected delay (the last of every N)" , kind: Kind::Int { min: 1, max: 1 << 32 } },
];

pub static METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "<workload>/<half>:real_time",
        unit: "ns",
        direction: "lower",
        help: "mean transaction latency of the SCHED_OTHER or SCHED_FIFO half",
    },
    MetricSpec {
        name: "<workload>/<half>:cpu_time",
        unit: "ns",
        direction: "lower",
        help: "on-CPU time of clients and servers per transaction of this half",
    },
    MetricSpec {
        name: "<workload>/<half>:p50",
        unit: "ns",
        direction: "lower",
        help: "median transaction latency",
    },
    MetricSpec {
        name: "<workload>/<half>:p90",
        unit: "ns",
        direction: "lower",
        help: "90th percentile",
    },
    MetricSpec {
        name: "<workload>/<half>:p99",
        unit: "ns",
        direction: "lower",
        help: "99th percentile",
    },
    MetricSpec {
        name: "<workload>/<half>:p99_9",
        unit: "ns",
        direction: "lower",
        help: "99.9th percentile",
    },
    MetricSpec {
        name: "<workload>/<half>:worst",
        unit: "ns",
        direction: "lower",
        help: "slowest transaction",
    },
    MetricSpec {
        name: "<workload>/<half>:best",
        unit: "ns",
        direction: "lower",
        help: "fastest transaction",
    },
    MetricSpec {
        name: "<workload>/<half>:misses",
        unit: "count",
        direction: "lower",
        help: "transactions over the deadline",
    },
    MetricSpec {
        name: "<workload>/<half>:meet_ratio",
        unit: "ratio",
        direction: "higher",
        help: "share of transactions within the deadline",
    },
    MetricSpec {
        name: "<workload>/<half>:same_cpu_ratio",
        unit: "ratio",
        direction: "none",
        help: "share of transactions served on the client's CPU",
    },
    MetricSpec {
        name: "<workload>/<half>:migrations",
        unit: "count",
        direction: "none",
        help: "CPU migrations of clients and servers per transaction (counted over both halves)",
    },
    MetricSpec {
        name: "<workload>/fifo:priority_inheritance",
        unit: "bool",
        direction: "none",
        help: "1 when the inheritance check passed, 0 when it failed",
    },
];

pub struct Config {
    pub iterations: u64,
    pub pairs: usize,
    pub deadline_ns: u64,
    pub payload: usize,
    pub warmup: u64,
    pub placement: &'static str,
    pub spin_us: u64,
    pub fifo_priority: i32,
    pub inheritance: &'static str,
    pub verbose: bool,
    pub trace: bool,
    inject: Option<(Duration, u64)>,
}

impl Config {
    pub fn parse(opts: &Options) -> Result<Config, WorkloadError> {
        let delay = opts.int("inject-delay-us")?;
        let config = Config {
            iterations: opts.int("iterations")?,
            pairs: opts.int("pair")? as usize,
            deadline_ns: opts.int("deadline-us")? * 1000,
            payload: opts.int("payload")? as usize,
            warmup: opts.int("warmup")?,
            placement: opts.choice("placement")?,
            spin_us: opts.int("spin-us")?,
            fifo_priority: opts.int("fifo-priority")? as i32,
            inheritance: opts.choice("inheritance")?,
            verbose: opts.flag("verbose")?,
            trace: opts.flag("trace")?,
            inject: (delay > 0)
                .then_some((Duration::from_micros(delay), opts.int("inject-every")?)),
        };
        let cpus = super::super::allowed_cpus()?.len();
        if config.pairs > cpus && !opts.flag("force")? {
            return Err(refused!(
                "--pair {} is more than the {cpus} CPUs this run may use: the pairs would wait for each other's CPUs, \
                 not for IPC (as Android's guidance warns); force it to run anyway (`benchlab ipc latency --force`, \
                 `force = true` in a spec)",
                config.pairs
            ));
        }
        Ok(config)
    }

    /// The injected delay of the server's reply in `iteration`, if it gets one.
    pub fn delayed(&self, iteration: u64) -> Option<Duration> {
        let (delay, every) = self.inject?;
        let timed = iteration.checked_sub(self.warmup)?;
        (timed % every == every - 1).then_some(delay)
    }
}
