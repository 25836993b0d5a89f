//! `ipc.<mechanism>.latency` is Android's binder latency test (schd-dbg) on
//! Linux mechanisms. `--pair N` client/server process pairs run at once; each
//! iteration a client makes one transaction as a SCHED_OTHER caller and one
//! as a SCHED_FIFO caller (switched outside the timed region; the server stays
//! SCHED_OTHER, since no Linux mechanism passes a caller's priority on). Every
//! transaction is timed on its own against `--deadline-us`; the server reports
//! the CPU it handled the request on, so "same CPU" (Android's SYNC) is
//! checked per transaction. Percentiles come from the exact samples (ns), not
//! from buckets.
//!
//! Google Benchmark output: one entry per half (`/other`, `/fifo`) over all
//! pairs. `--format android` prints the Android test's JSON: `cfg`, `P<i>`
//! per pair, `ALL`, `inheritance`.

use super::channel::{shared_word, with_spin, Channel, Gate, Mechanism, MECHANISMS};
use super::inheritance::{self, set_policy, LOCKS};
use super::tracing::Tracer;
use super::{current_cpu, migrations_of, pin, placement_cpus, thread_cpu_ns, Ledger, PLACEMENTS};
use crate::workloads::children::{fork_with, pipe, reap};
use crate::report::{Counter, Direction, Entry};
use crate::timing::percentile;
use crate::workload::{Digest, Kind, MetricSpec, OptionSpec, Options, Workload};
use serde_json::{json, Map, Value};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

per_mechanism!(Latency, "latency");

static OPTIONS: &[OptionSpec] = &[
    OptionSpec { name: "iterations", default: "2000", help: "iterations per pair (Android's -i); each makes a SCHED_OTHER and a SCHED_FIFO transaction" , kind: Kind::Int { min: 1, max: 1 << 26 } },
    OptionSpec { name: "pair", default: "1", help: "client/server process pairs run at once (Android's -pair)" , kind: Kind::Int { min: 1, max: Ledger::SLOTS as u64 } },
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

static METRICS: &[MetricSpec] = &[
    MetricSpec { name: "<workload>/<half>:real_time", unit: "ns", direction: "lower", help: "mean transaction latency of the SCHED_OTHER or SCHED_FIFO half" },
    MetricSpec { name: "<workload>/<half>:cpu_time", unit: "ns", direction: "lower", help: "on-CPU time of clients and servers per transaction (both halves)" },
    MetricSpec { name: "<workload>/<half>:p50", unit: "ns", direction: "lower", help: "median transaction latency" },
    MetricSpec { name: "<workload>/<half>:p90", unit: "ns", direction: "lower", help: "90th percentile" },
    MetricSpec { name: "<workload>/<half>:p99", unit: "ns", direction: "lower", help: "99th percentile" },
    MetricSpec { name: "<workload>/<half>:p99_9", unit: "ns", direction: "lower", help: "99.9th percentile" },
    MetricSpec { name: "<workload>/<half>:worst", unit: "ns", direction: "lower", help: "slowest transaction" },
    MetricSpec { name: "<workload>/<half>:best", unit: "ns", direction: "lower", help: "fastest transaction" },
    MetricSpec { name: "<workload>/<half>:misses", unit: "count", direction: "lower", help: "transactions over the deadline" },
    MetricSpec { name: "<workload>/<half>:meet_ratio", unit: "ratio", direction: "higher", help: "share of transactions within the deadline" },
    MetricSpec { name: "<workload>/<half>:same_cpu_ratio", unit: "ratio", direction: "none", help: "share of transactions served on the client's CPU" },
    MetricSpec { name: "<workload>/<half>:migrations", unit: "count", direction: "none", help: "CPU migrations of clients and servers per transaction" },
    MetricSpec { name: "<workload>/fifo:priority_inheritance", unit: "bool", direction: "none", help: "1 when the inheritance check passed, 0 when it failed" },
];

/// Every message starts with the iteration's sequence number, the client's
/// CPU when it sent, and the server's CPU when it handled the request.
const HEADER: usize = 16;

struct Config {
    iterations: u64,
    pairs: usize,
    deadline_ns: u64,
    payload: usize,
    warmup: u64,
    placement: &'static str,
    spin_us: u64,
    fifo_priority: i32,
    inheritance: &'static str,
    verbose: bool,
    trace: bool,
    inject: Option<(Duration, u64)>,
}

impl Config {
    fn parse(opts: &Options) -> Result<Config, String> {
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
            inject: (delay > 0).then_some((Duration::from_micros(delay), opts.int("inject-every")?)),
        };
        let cpus = super::allowed_cpus()?.len();
        if config.pairs > cpus && !opts.flag("force")? {
            return Err(format!(
                "--pair {} is more than the {cpus} CPUs this run may use: the pairs would wait for each other's CPUs, \
                 not for IPC (as Android's guidance warns); force it to run anyway (`benchlab ipc latency --force`, \
                 `force = true` in a spec)",
                config.pairs
            ));
        }
        Ok(config)
    }

    fn delayed(&self, iteration: u64) -> Option<Duration> {
        let (delay, every) = self.inject?;
        let timed = iteration.checked_sub(self.warmup)?;
        (timed % every == every - 1).then_some(delay)
    }
}

/// What one pair measured, sent from its client to the parent through a pipe.
#[derive(Default)]
struct PairResult {
    other: Vec<u64>,
    fifo: Vec<u64>,
    same_cpu_other: u64,
    same_cpu_fifo: u64,
    migrations: Option<u64>,
    cpu_ns: u64, // client and server over the timed iterations
}

const NONE: u64 = u64::MAX;

impl PairResult {
    fn to_words(&self) -> Vec<u64> {
        let mut words = vec![
            self.same_cpu_other,
            self.same_cpu_fifo,
            self.migrations.unwrap_or(NONE),
            self.cpu_ns,
            self.other.len() as u64,
            self.fifo.len() as u64,
        ];
        words.extend(&self.other);
        words.extend(&self.fifo);
        words
    }

    fn from_words(w: &[u64]) -> Option<PairResult> {
        let (head, rest) = (w.get(..6)?, w.get(6..)?);
        let (n_other, n_fifo) = (head[4] as usize, head[5] as usize);
        if rest.len() != n_other + n_fifo {
            return None;
        }
        let some = |v: u64| (v != NONE).then_some(v);
        Some(PairResult {
            same_cpu_other: head[0],
            same_cpu_fifo: head[1],
            migrations: some(head[2]),
            cpu_ns: head[3],
            other: rest[..n_other].to_vec(),
            fifo: rest[n_other..].to_vec(),
        })
    }
}

fn policy_name() -> String {
    // SAFETY: reading the calling thread's own policy and parameters.
    let (policy, priority) = unsafe {
        let mut param: libc::sched_param = std::mem::zeroed();
        libc::sched_getparam(0, &mut param);
        (libc::sched_getscheduler(0), param.sched_priority)
    };
    match policy {
        libc::SCHED_FIFO => format!("SCHED_FIFO/{priority}"),
        libc::SCHED_RR => format!("SCHED_RR/{priority}"),
        libc::SCHED_OTHER => "SCHED_OTHER".into(),
        other => format!("policy {other}"),
    }
}

fn describe(name: &str, pair: usize, role: &str) {
    // SAFETY: getpid and gettid have no preconditions.
    let (pid, tid) = unsafe { (libc::getpid(), libc::gettid()) };
    let line = format!("{name} P{pair} {role}: pid {pid} tid {tid} CPU {} {}\n", current_cpu(), policy_name());
    let _ = std::io::stderr().write_all(line.as_bytes()); // one write: lines of several processes stay whole
}

/// Whether this process may make SCHED_FIFO calls; Err says why not.
fn fifo_permitted(priority: i32) -> Result<(), String> {
    set_policy(libc::SCHED_FIFO, priority).map_err(|e| format!("no real-time privilege ({e}); run as root or grant CAP_SYS_NICE or an RLIMIT_RTPRIO"))?;
    set_policy(libc::SCHED_OTHER, 0)
}

fn write_u32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn read_u32(buf: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(buf[at..at + 4].try_into().unwrap())
}

fn read_u64(buf: &[u8]) -> u64 {
    u64::from_le_bytes(buf[..8].try_into().unwrap())
}

/// The server: checks each request's sequence, stamps its CPU, adds one to
/// every payload byte; its CPU time over the timed iterations goes to the
/// ledger just before the last reply.
fn serve(channel: &mut dyn Channel, config: &Config, halves: u64, ledger: &Ledger, pair: usize) -> Result<(), String> {
    let mut msg = vec![0u8; config.payload];
    let mut start = thread_cpu_ns();
    let last = config.warmup + config.iterations - 1;
    for i in 0..=last {
        for half in 0..halves {
            channel.recv(&mut msg)?;
            let seq = 2 * i + half;
            if read_u64(&msg) != seq {
                return Err(format!("request {} arrived where {seq} was due", read_u64(&msg)));
            }
            write_u32(&mut msg, 12, current_cpu());
            msg[HEADER..].iter_mut().for_each(|b| *b = b.wrapping_add(1));
            if let Some(delay) = config.delayed(i) {
                std::thread::sleep(delay);
            }
            if i == last && half + 1 == halves {
                ledger.put(pair, thread_cpu_ns() - start);
            }
            channel.send(&msg)?;
        }
        if i + 1 == config.warmup {
            start = thread_cpu_ns();
        }
    }
    Ok(())
}

struct Client<'a> {
    name: &'static str,
    mechanism: &'static str,
    config: &'a Config,
    pair: usize,
    missed: &'static AtomicU32, // set by the run's first deadline miss, whichever pair makes it
    tracer: Option<&'a Tracer>,
    request: Vec<u8>,
    reply: Vec<u8>,
}

impl Client<'_> {
    /// One timed transaction: (latency ns, served on the client's CPU).
    fn transact(&mut self, channel: &mut dyn Channel, seq: u64, timed: bool) -> Result<(u64, bool), String> {
        self.request[..8].copy_from_slice(&seq.to_le_bytes());
        for (j, b) in self.request[HEADER..].iter_mut().enumerate() {
            *b = (seq as u8).wrapping_mul(31).wrapping_add(j as u8);
        }
        let cpu = current_cpu();
        write_u32(&mut self.request, 8, cpu);
        let start = Instant::now();
        channel.send(&self.request)?;
        channel.recv(&mut self.reply)?;
        let ns = start.elapsed().as_nanos() as u64;
        let intact = read_u64(&self.reply) == seq
            && self.request[HEADER..].iter().zip(&self.reply[HEADER..]).all(|(q, r)| q.wrapping_add(1) == *r);
        if !intact {
            return Err(format!("transaction {seq} over {} came back altered", self.mechanism));
        }
        let server_cpu = read_u32(&self.reply, 12);
        if timed && ns > self.config.deadline_ns {
            self.missed(seq, ns, cpu, server_cpu);
        }

        Ok((ns, server_cpu == cpu))
    }

    /// The run's first miss, whichever pair makes it, marks the trace and stops tracing.
    fn missed(&self, seq: u64, ns: u64, cpu: u32, server_cpu: u32) {
        if self.missed.swap(1, Ordering::AcqRel) != 0 {
            return;
        }
        if let Some(tracer) = self.tracer {
            let half = if seq.is_multiple_of(2) { "SCHED_OTHER" } else { "SCHED_FIFO" };
            tracer.miss(&format!(
                "{} deadline miss: pair P{} iteration {} {half} {} us > {} us, client CPU {cpu} server CPU {server_cpu}",
                self.name,
                self.pair,
                seq / 2 - self.config.warmup,
                ns / 1000,
                self.config.deadline_ns / 1000
            ));
        }
    }

    fn run(&mut self, channel: &mut dyn Channel, server: libc::pid_t, fifo: bool, ledger: &Ledger) -> Result<PairResult, String> {
        // SAFETY: getpid has no preconditions.
        let pids = [unsafe { libc::getpid() }, server];
        let config = self.config;
        let mut result = PairResult::default();
        let (mut moved_before, mut cpu_before) = (migrations_of(&pids), thread_cpu_ns());
        for i in 0..config.warmup + config.iterations {
            if i == config.warmup {
                (moved_before, cpu_before) = (migrations_of(&pids), thread_cpu_ns());
            }
            let timed = i >= config.warmup;
            let (ns, same) = self.transact(channel, 2 * i, timed)?;
            if timed {
                result.other.push(ns);
                result.same_cpu_other += same as u64;
            }
            if fifo {
                set_policy(libc::SCHED_FIFO, config.fifo_priority)?;
                if config.verbose && i == 0 {
                    describe(self.name, self.pair, "client");
                }
                let (ns, same) = self.transact(channel, 2 * i + 1, timed)?;
                set_policy(libc::SCHED_OTHER, 0)?;
                if timed {
                    result.fifo.push(ns);
                    result.same_cpu_fifo += same as u64;
                }
            }
        }
        result.migrations = migrations_of(&pids).zip(moved_before).map(|(a, b)| a.saturating_sub(b));
        result.cpu_ns = thread_cpu_ns() - cpu_before + ledger.get(self.pair);
        Ok(result)
    }
}

/// One half's numbers over one or more pairs.
struct Half {
    sorted: Vec<u64>,
    same_cpu: u64,
    deadline_ns: u64,
}

impl Half {
    fn new(samples: impl Iterator<Item = u64>, same_cpu: u64, deadline_ns: u64) -> Half {
        let mut sorted: Vec<u64> = samples.collect();
        sorted.sort_unstable();
        Half { sorted, same_cpu, deadline_ns }
    }
    fn n(&self) -> u64 {
        self.sorted.len() as u64
    }
    fn misses(&self) -> u64 {
        self.n() - self.sorted.partition_point(|&ns| ns <= self.deadline_ns) as u64
    }
    fn mean(&self) -> f64 {
        self.sorted.iter().sum::<u64>() as f64 / self.n().max(1) as f64
    }
    fn meet_ratio(&self) -> f64 {
        1.0 - self.misses() as f64 / self.n().max(1) as f64
    }
    fn quantiles(&self) -> [(&'static str, f64); 4] {
        [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)].map(|(k, q)| (k, percentile(&self.sorted, q)))
    }

    /// Android's `other_ms` / `fifo_ms` object (with the percentiles added).
    fn android(&self) -> Value {
        let ms = |ns: f64| (ns / 1e6 * 1e6).round() / 1e6; // ms to the nanosecond
        let mut m = Map::new();
        m.insert("avg".into(), json!(ms(self.mean())));
        m.insert("wst".into(), json!(ms(*self.sorted.last().unwrap_or(&0) as f64)));
        m.insert("bst".into(), json!(ms(*self.sorted.first().unwrap_or(&0) as f64)));
        m.insert("miss".into(), json!(self.misses()));
        m.insert("meetR".into(), json!(self.meet_ratio()));
        for (k, v) in self.quantiles() {
            m.insert(k.into(), json!(ms(v)));
        }
        Value::Object(m)
    }

    fn entry(&self, name: String, on_cpu_per_transaction: Option<f64>, migrations: Option<f64>, extra: Vec<Counter>) -> Entry {
        let n = self.n();
        let mut counters: Vec<Counter> = self
            .quantiles()
            .iter()
            .map(|(k, v)| Counter::new(&k.replace('.', "_"), *v, "ns", Direction::Lower))
            .collect();
        counters.push(Counter::new("worst", *self.sorted.last().unwrap_or(&0) as f64, "ns", Direction::Lower));
        counters.push(Counter::new("best", *self.sorted.first().unwrap_or(&0) as f64, "ns", Direction::Lower));
        counters.push(Counter::new("misses", self.misses() as f64, "count", Direction::Lower));
        counters.push(Counter::new("meet_ratio", self.meet_ratio(), "ratio", Direction::Higher));
        counters.push(Counter::new("same_cpu_ratio", self.same_cpu as f64 / n.max(1) as f64, "ratio", Direction::None));
        if let Some(m) = migrations {
            counters.push(Counter::new("migrations", m, "count", Direction::None));
        }
        counters.extend(extra);
        let mut digest = Digest::new();
        digest.word(n);
        Entry {
            name,
            iterations: n,
            threads: 1,
            real_time_ns: self.mean(),
            cpu_time_ns: on_cpu_per_transaction.unwrap_or_default(),
            items_per_second: None,
            bytes_per_second: None,
            counters,
            checksum: digest.hex(),
        }
    }
}

/// Android's per-pair (or ALL) object: SYNC, S, I, R and the two halves.
fn android_group(other: &Half, fifo: Option<&Half>, fifo_skipped: &Option<String>) -> Value {
    let checked = other.n() + fifo.map_or(0, Half::n);
    let same = other.same_cpu + fifo.map_or(0, |f| f.same_cpu);
    let mut m = Map::new();
    m.insert("SYNC".into(), json!(if same == checked { "GOOD" } else { "POOR" }));
    m.insert("S".into(), json!(same));
    m.insert("I".into(), json!(checked));
    m.insert("R".into(), json!(same as f64 / checked.max(1) as f64));
    m.insert("other_ms".into(), other.android());
    m.insert(
        "fifo_ms".into(),
        match (fifo, fifo_skipped) {
            (Some(f), _) => f.android(),
            (None, reason) => json!({ "skipped": reason.clone().unwrap_or_default() }),
        },
    );
    Value::Object(m)
}

/// A whole run: the configuration, every pair's result and what was skipped or found.
struct Outcome {
    pairs: Vec<PairResult>,
    fifo_skipped: Option<String>,
    inheritance: Option<Result<inheritance::Finding, String>>,
    notes: Vec<String>,
}

impl Latency {
    fn measure(&self, opts: &Options) -> Result<(Config, Outcome), String> {
        let config = Config::parse(opts)?;
        if let (Some(why), 2..) = (self.mechanism.one_pair, config.pairs) {
            return Err(format!("{} runs at most 1 pair(s) at once: {why}", self.mechanism.name));
        }
        let mut notes = Vec::new();
        let fifo_skipped = fifo_permitted(config.fifo_priority)
            .err()
            .map(|why| format!("the SCHED_FIFO half was skipped: {why}"));
        notes.extend(fifo_skipped.clone());
        let tracer = match config.trace.then(Tracer::start) {
            Some(Ok(tracer)) => Some(tracer),
            Some(Err(why)) => {
                notes.push(format!("--trace: {why}"));
                None
            }
            None => None,
        };
        let placement = placement_cpus(config.placement, config.pairs)?;
        let (start, missed) = (Gate::new()?, shared_word()?);
        let ledger = Ledger::new()?;
        let halves = if fifo_skipped.is_none() { 2 } else { 1 };
        let mut children = Vec::new(); // (client, server, results pipe)
        for pair in 0..config.pairs {
            let cpus = placement.as_ref().map(|p| p[pair]);
            let (client, server) = (self.mechanism.make)(config.payload)?;
            let (client, server) = (with_spin(client, config.spin_us), with_spin(server, config.spin_us));
            let config = &config;
            let (server_pid, client) = fork_with(&format!("{} P{pair} server", self.name), server, client, |mut server| {
                cpus.map_or(Ok(()), |(_, cpu)| pin(cpu))?;
                if config.verbose {
                    describe(self.name, pair, "server");
                }
                serve(server.as_mut(), config, halves, &ledger, pair)
            })?;
            let (results, to_parent) = pipe()?;
            let mut client_state = Client {
                name: self.name,
                mechanism: self.mechanism.name,
                config,
                pair,
                missed,
                tracer: tracer.as_ref(),
                request: vec![0u8; config.payload],
                reply: vec![0u8; config.payload],
            };
            let (client_pid, results) = fork_with(&format!("{} P{pair} client", self.name), (client, to_parent), results, |(mut channel, mut to_parent)| {
                cpus.map_or(Ok(()), |(cpu, _)| pin(cpu))?;
                if config.verbose {
                    describe(self.name, pair, "client");
                }
                start.wait();
                let result = client_state.run(channel.as_mut(), server_pid, halves == 2, &ledger)?;
                let bytes: Vec<u8> = result.to_words().iter().flat_map(|w| w.to_le_bytes()).collect();
                to_parent.write_all(&bytes).map_err(|e| format!("sending the results: {e}"))
            })?;
            children.push((client_pid, server_pid, results));
        }
        start.open();
        let mut pairs = Vec::new();
        let mut failure = None;
        for (client, server, mut results) in children {
            let mut bytes = Vec::new();
            let read = results.read_to_end(&mut bytes);
            let ended = reap(client, "client");
            if ended.is_err() || read.is_err() {
                // SAFETY: killing our own child, which may wait forever for a client that is gone.
                unsafe { libc::kill(server, libc::SIGKILL) };
            }
            let served = reap(server, "server");
            let words: Vec<u64> = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
            match (ended, served, PairResult::from_words(&words)) {
                (Ok(()), Ok(()), Some(result)) => pairs.push(result),
                (Err(e), _, _) | (_, Err(e), _) => failure = failure.or(Some(e)),
                (_, _, None) => failure = failure.or(Some("a client's results arrived incomplete".into())),
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        let inheritance = match (config.inheritance, &fifo_skipped) {
            ("off", _) => None,
            (_, Some(_)) => Some(Err("skipped: no real-time privilege".into())),
            (lock, None) => Some(inheritance::check(lock, config.fifo_priority)),
        };
        if let Some(Err(why)) = &inheritance {
            notes.push(format!("priority-inheritance check: {why}"));
        }
        Ok((config, Outcome { pairs, fifo_skipped, inheritance, notes }))
    }
}

impl Outcome {
    fn halves(&self, config: &Config, pairs: &[&PairResult]) -> (Half, Option<Half>) {
        let other = Half::new(pairs.iter().flat_map(|p| p.other.iter().copied()), pairs.iter().map(|p| p.same_cpu_other).sum(), config.deadline_ns);
        let fifo = self.fifo_skipped.is_none().then(|| {
            Half::new(pairs.iter().flat_map(|p| p.fifo.iter().copied()), pairs.iter().map(|p| p.same_cpu_fifo).sum(), config.deadline_ns)
        });
        (other, fifo)
    }

    fn print_notes(&self, name: &str) {
        for note in &self.notes {
            eprintln!("benchlab-probe: note: {name}: {note}");
        }
        if let Some(Ok(finding)) = &self.inheritance {
            eprintln!("benchlab-probe: {name}: priority inheritance {}: {}", if finding.boosted { "PASS" } else { "FAIL" }, finding.text);
        }
    }
}

impl Workload for Latency {
    fn name(&self) -> &'static str {
        self.name
    }
    fn description(&self) -> &'static str {
        "client/server pairs, one SCHED_OTHER and one SCHED_FIFO transaction per iteration, against a deadline (binder latency test)"
    }
    fn version(&self) -> u32 {
        1
    }
    fn options(&self) -> &'static [OptionSpec] {
        OPTIONS
    }
    fn metrics(&self) -> &'static [MetricSpec] {
        METRICS
    }
    fn check(&self, opts: &Options) -> Result<(), String> {
        let config = Config::parse(opts)?;
        placement_cpus(config.placement, config.pairs).map(drop)
    }
    fn run(&self, opts: &Options) -> Result<Vec<Entry>, String> {
        let (config, outcome) = self.measure(opts)?;
        outcome.print_notes(self.name);
        let all: Vec<&PairResult> = outcome.pairs.iter().collect();
        let (other, fifo) = outcome.halves(&config, &all);
        let transactions = other.n() + fifo.as_ref().map_or(0, Half::n);
        let per = |total: Option<u64>| total.map(|t| t as f64 / transactions.max(1) as f64);
        let on_cpu = per(Some(all.iter().map(|p| p.cpu_ns).sum()));
        let migrations = per(all.iter().map(|p| p.migrations).sum());
        let mut entries = vec![other.entry(format!("{}/other", self.name), on_cpu, migrations, vec![])];
        if let Some(fifo) = fifo {
            let inheritance: Vec<Counter> = match &outcome.inheritance {
                Some(Ok(f)) => vec![Counter::new("priority_inheritance", f.boosted as u64 as f64, "bool", Direction::None)],
                _ => vec![],
            };
            entries.push(fifo.entry(format!("{}/fifo", self.name), on_cpu, migrations, inheritance));
        }
        Ok(entries)
    }

    fn run_android(&self, opts: &Options) -> Option<Result<Value, String>> {
        Some(self.measure(opts).map(|(config, outcome)| {
            outcome.print_notes(self.name);
            let mut doc = Map::new();
            doc.insert(
                "cfg".into(),
                json!({
                    "pair": config.pairs, "iterations": config.iterations, "deadline_us": config.deadline_ns / 1000,
                    "mechanism": self.mechanism.name, "payload": config.payload, "placement": config.placement,
                    "spin_us": config.spin_us, "fifo_priority": config.fifo_priority,
                }),
            );
            for (i, pair) in outcome.pairs.iter().enumerate() {
                let (other, fifo) = outcome.halves(&config, &[pair]);
                doc.insert(format!("P{i}"), android_group(&other, fifo.as_ref(), &outcome.fifo_skipped));
            }
            let all: Vec<&PairResult> = outcome.pairs.iter().collect();
            let (other, fifo) = outcome.halves(&config, &all);
            doc.insert("ALL".into(), android_group(&other, fifo.as_ref(), &outcome.fifo_skipped));
            let verdict = match &outcome.inheritance {
                None => "OFF",
                Some(Ok(f)) if f.boosted => "PASS",
                Some(Ok(_)) => "FAIL",
                Some(Err(_)) => "SKIPPED",
            };
            doc.insert("inheritance".into(), json!(verdict));
            if !outcome.notes.is_empty() {
                doc.insert("notes".into(), json!(outcome.notes));
            }
            Value::Object(doc)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_survive_the_pipe_format() {
        let r = PairResult { other: vec![5, 6, 7], fifo: vec![8], same_cpu_other: 2, same_cpu_fifo: 1, migrations: None, cpu_ns: 99 };
        let back = PairResult::from_words(&r.to_words()).unwrap();
        assert_eq!((back.other, back.fifo, back.migrations, back.cpu_ns), (vec![5, 6, 7], vec![8], None, 99));
        assert!(PairResult::from_words(&r.to_words()[..7]).is_none());
    }

    #[test]
    fn misses_count_samples_over_the_deadline() {
        let half = Half::new([100, 2500, 2501, 9000].into_iter(), 4, 2500);
        assert_eq!(half.misses(), 2);
        assert_eq!(half.meet_ratio(), 0.5);
        let android = half.android();
        assert_eq!(android["miss"], 2);
        assert_eq!(android["wst"], 0.009);
        assert_eq!(android["bst"], 0.0001);
    }
}
