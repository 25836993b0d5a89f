//! Google Benchmark's output formats, so that every tool that reads Google
//! Benchmark JSON (benchlab included) reads the probe too.

use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// Whether a larger value of a counter is an improvement.
#[derive(Clone, Copy, Debug)]
pub enum Direction {
    Lower,
    Higher,
    /// A description of the run (how many threads it used), never judged better or worse.
    None,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Direction::Lower => "lower",
            Direction::Higher => "higher",
            Direction::None => "none",
        }
    }
}

/// A benchlab extra counter: rides in the entry like a Google Benchmark user
/// counter, with its unit and direction in the entry's `benchlab` object.
pub struct Counter {
    pub name: String,
    pub value: f64,
    pub unit: &'static str,
    pub direction: Direction,
}

impl Counter {
    pub fn new(name: &str, value: f64, unit: &'static str, direction: Direction) -> Self {
        Counter {
            name: name.to_string(),
            value,
            unit,
            direction,
        }
    }
}

/// One row of a Google Benchmark report; times are per iteration, in ns.
pub struct Entry {
    pub name: String,
    pub iterations: u64,
    /// Threads that ran the benchmark (Google Benchmark's `threads` field).
    pub threads: u64,
    pub real_time_ns: f64,
    pub cpu_time_ns: f64,
    pub items_per_second: Option<f64>,
    pub bytes_per_second: Option<f64>,
    pub counters: Vec<Counter>,
    pub checksum: String,
}

pub struct Context {
    pub workload: String,
    pub workload_version: u32,
    /// benchlab's own fields (`protocol::Said`), which Google Benchmark's context leaves room for
    pub said: Value,
}

fn num_cpus() -> i64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) as i64 }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn mhz_per_cpu() -> i64 {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v.round() as i64)
        .unwrap_or(0)
}

fn load_avg() -> Vec<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .filter_map(|v| v.parse().ok())
        .collect()
}

fn context_json(ctx: &Context) -> Value {
    json!({
        "date": chrono::Local::now().to_rfc3339(),
        "host_name": host_name(),
        "executable": std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
        "num_cpus": num_cpus(),
        "mhz_per_cpu": mhz_per_cpu(),
        "cpu_scaling_enabled": false,
        "caches": [],
        "load_avg": load_avg(),
        "library_build_type": if cfg!(debug_assertions) { "debug" } else { "release" },
        "benchlab_probe_version": env!("CARGO_PKG_VERSION"),
        "workload": ctx.workload,
        "workload_version": ctx.workload_version,
        "benchlab": ctx.said,
    })
}

fn entry_json(index: usize, e: &Entry) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(e.name));
    m.insert("family_index".into(), json!(index));
    m.insert("per_family_instance_index".into(), json!(0));
    m.insert("run_name".into(), json!(e.name));
    m.insert("run_type".into(), json!("iteration"));
    m.insert("repetitions".into(), json!(1));
    m.insert("repetition_index".into(), json!(0));
    m.insert("threads".into(), json!(e.threads));
    m.insert("iterations".into(), json!(e.iterations));
    m.insert("real_time".into(), json!(e.real_time_ns));
    m.insert("cpu_time".into(), json!(e.cpu_time_ns));
    m.insert("time_unit".into(), json!("ns"));
    if let Some(v) = e.bytes_per_second {
        m.insert("bytes_per_second".into(), json!(v));
    }
    if let Some(v) = e.items_per_second {
        m.insert("items_per_second".into(), json!(v));
    }
    let mut extras = Map::new();
    for c in &e.counters {
        m.insert(c.name.clone(), json!(c.value));
        extras.insert(
            c.name.clone(),
            json!({"unit": c.unit, "direction": c.direction.as_str()}),
        );
    }
    m.insert("checksum".into(), json!(e.checksum));
    m.insert("benchlab".into(), Value::Object(extras));
    Value::Object(m)
}

pub fn to_json(ctx: &Context, entries: &[Entry]) -> String {
    let doc = json!({
        "context": context_json(ctx),
        "benchmarks": entries.iter().enumerate().map(|(i, e)| entry_json(i, e)).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&doc).expect("JSON of plain values")
}

/// Google Benchmark's console table: name, time, CPU, iterations, counters.
pub fn to_console(entries: &[Entry]) -> String {
    let width = entries
        .iter()
        .map(|e| e.name.len())
        .max()
        .unwrap_or(9)
        .max(9);
    let mut out = String::new();
    let rule = "-".repeat(width + 56);
    let _ = writeln!(out, "{rule}");
    let _ = writeln!(
        out,
        "{:<width$} {:>15} {:>15} {:>12} UserCounters...",
        "Benchmark", "Time", "CPU", "Iterations"
    );
    let _ = writeln!(out, "{rule}");
    for e in entries {
        let mut counters = Vec::new();
        if let Some(v) = e.bytes_per_second {
            counters.push(format!("bytes_per_second={}", human(v, "/s")));
        }
        if let Some(v) = e.items_per_second {
            counters.push(format!("items_per_second={}", human(v, "/s")));
        }
        for c in &e.counters {
            counters.push(format!("{}={}", c.name, human(c.value, "")));
        }
        let _ = writeln!(
            out,
            "{:<width$} {:>12.0} ns {:>12.0} ns {:>12} {}",
            e.name,
            e.real_time_ns,
            e.cpu_time_ns,
            e.iterations,
            counters.join(" ")
        );
    }
    out
}

fn human(v: f64, suffix: &str) -> String {
    let (scaled, prefix) = if v.abs() >= 1e9 {
        (v / 1e9, "G")
    } else if v.abs() >= 1e6 {
        (v / 1e6, "M")
    } else if v.abs() >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    format!("{scaled:.4}{prefix}{suffix}")
}
