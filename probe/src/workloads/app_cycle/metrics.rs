//! What a cycle reports: its metrics (launch latencies by start type, kills, reclaim and zram
//! counters over the cycle) and the details a run keeps (each launch, each app's accounting).

use super::*;

macro_rules! metric {
    ($name:expr, $unit:expr, $dir:expr, $help:expr) => {
        MetricSpec {
            name: $name,
            unit: $unit,
            direction: $dir,
            help: $help,
        }
    };
}

pub(super) static METRICS: &[MetricSpec] = &[
    metric!(
        "real_time",
        "ns",
        "lower",
        "mean launch time over every launch of the cycle"
    ),
    metric!(
        "launch_hot",
        "ms",
        "lower",
        "mean hot launch time (process and activity alive)"
    ),
    metric!(
        "launch_warm",
        "ms",
        "lower",
        "mean warm launch time (process alive, activity state rebuilt)"
    ),
    metric!(
        "launch_cold",
        "ms",
        "lower",
        "mean cold launch time (a new process)"
    ),
    metric!("launches_hot", "count", "none", "hot launches"),
    metric!("launches_warm", "count", "none", "warm launches"),
    metric!("launches_cold", "count", "none", "cold launches"),
    metric!(
        "hot_cold",
        "ratio",
        "higher",
        "hot launches per cold launch"
    ),
    metric!(
        "hot_warm",
        "ratio",
        "higher",
        "hot launches per warm launch"
    ),
    metric!(
        "warm_cold",
        "ratio",
        "higher",
        "warm launches per cold launch"
    ),
    metric!(
        "launch_failures",
        "count",
        "lower",
        "launches that did not come up (the app died or hung)"
    ),
    metric!("kills", "count", "lower", "apps killed, every source"),
    metric!(
        "kills_am",
        "count",
        "lower",
        "apps the activity manager killed (over the cached-app limit)"
    ),
    metric!(
        "kills_lmk",
        "count",
        "lower",
        "apps the low-memory killer killed (kills_lmk_REASON by reason)"
    ),
    metric!(
        "kills_oom",
        "count",
        "lower",
        "apps the kernel killed (SIGKILL benchlab did not send)"
    ),
    metric!(
        "oom_kill",
        "count",
        "none",
        "the kernel's oom_kill count over the cycle (every process)"
    ),
    metric!(
        "refault_anon",
        "count",
        "lower",
        "anonymous working-set refaults (workingset_refault_anon)"
    ),
    metric!(
        "refault_file",
        "count",
        "lower",
        "file working-set refaults (workingset_refault_file)"
    ),
    metric!(
        "kswapd_cpu",
        "ms",
        "lower",
        "CPU time of kswapd (schedstat)"
    ),
    metric!(
        "efficiency_kswapd",
        "%",
        "higher",
        "pgsteal_kswapd / pgscan_kswapd"
    ),
    metric!(
        "efficiency_direct",
        "%",
        "higher",
        "pgsteal_direct / pgscan_direct"
    ),
    metric!(
        "efficiency_anon",
        "%",
        "higher",
        "pgsteal_anon / pgscan_anon"
    ),
    metric!(
        "efficiency_file",
        "%",
        "higher",
        "pgsteal_file / pgscan_file"
    ),
    metric!(
        "direct_share",
        "%",
        "none",
        "share of pages scanned by direct reclaim: direct / (direct + kswapd)"
    ),
    metric!(
        "direct_reclaims",
        "count",
        "lower",
        "entries into direct reclaim (traced; allocstall without a trace)"
    ),
    metric!(
        "direct_stall",
        "ms",
        "lower",
        "time spent in direct reclaim, summed"
    ),
    metric!(
        "direct_lt5ms",
        "count",
        "lower",
        "direct reclaims under 5 ms"
    ),
    metric!(
        "direct_5_50ms",
        "count",
        "lower",
        "direct reclaims of 5-50 ms"
    ),
    metric!(
        "direct_50_500ms",
        "count",
        "lower",
        "direct reclaims of 50-500 ms"
    ),
    metric!(
        "direct_gt500ms",
        "count",
        "lower",
        "direct reclaims over 500 ms"
    ),
    metric!(
        "trace_lost",
        "count",
        "none",
        "trace events the kernel overwrote before they were read"
    ),
    metric!(
        "allocstall",
        "count",
        "none",
        "the kernel's allocstall count (entries into direct reclaim)"
    ),
    metric!("pswpin", "count", "none", "pages swapped in"),
    metric!("pswpout", "count", "none", "pages swapped out"),
    metric!(
        "psi_some",
        "ms",
        "lower",
        "time some task stalled on memory (PSI)"
    ),
    metric!(
        "psi_full",
        "ms",
        "lower",
        "time all tasks stalled on memory (PSI)"
    ),
    metric!(
        "zram_ratio",
        "ratio",
        "none",
        "zram: original / compressed size at the cycle's end"
    ),
    metric!(
        "zram_used_max",
        "B",
        "none",
        "zram: the most memory it used"
    ),
];

/// The kernel's state at one moment, for deltas over the cycle.
pub(super) struct Snapshot {
    pub(super) vm: BTreeMap<String, u64>,
    pub(super) kswapd_ns: Option<u64>,
    pub(super) psi: Option<Psi>,
}

impl Snapshot {
    pub(super) fn take() -> Snapshot {
        Snapshot {
            vm: vmstat_exact(),
            kswapd_ns: kswapd_cpu_ns(),
            psi: psi(),
        }
    }

    /// The change of a vmstat counter; None where the kernel has no such counter.
    pub(super) fn delta(&self, before: &Snapshot, key: &str) -> Option<f64> {
        Some(self.vm.get(key)?.saturating_sub(*before.vm.get(key)?) as f64)
    }
}

pub(super) struct Metrics {
    pub(super) counters: Vec<Counter>,
    pub(super) said: Vec<(&'static str, String)>,
}

impl Metrics {
    pub(super) fn add(&mut self, name: &str, value: f64) {
        let spec = METRICS
            .iter()
            .find(|m| m.name == name)
            .expect("a declared metric");
        let direction = match spec.direction {
            "lower" => Direction::Lower,
            "higher" => Direction::Higher,
            _ => Direction::None,
        };
        self.counters
            .push(Counter::new(name, value, spec.unit, direction));
    }

    pub(super) fn maybe(&mut self, name: &str, value: Option<f64>) {
        if let Some(v) = value {
            self.add(name, v);
        }
    }

    /// `steal / scan` in percent; None where nothing was scanned (no efficiency to speak of).
    pub(super) fn efficiency(&mut self, name: &str, end: &Snapshot, start: &Snapshot, class: &str) {
        let scanned = end.delta(start, &format!("pgscan_{class}"));
        let stolen = end.delta(start, &format!("pgsteal_{class}"));
        if let (Some(scan), Some(steal)) = (scanned, stolen) {
            if scan > 0.0 {
                self.add(name, 100.0 * steal / scan);
            }
        }
    }
}

pub(super) const MS: f64 = 1e6;

pub(super) fn launch_metrics(m: &mut Metrics, launches: &[Launch]) -> f64 {
    let mut counts = BTreeMap::new();
    for (start, name) in STARTS {
        let times: Vec<f64> = launches
            .iter()
            .filter(|l| l.start == start)
            .filter_map(|l| l.latency_ns)
            .map(|t| t as f64)
            .collect();
        counts.insert(name, times.len() as f64);
        m.add(&format!("launches_{name}"), times.len() as f64);
        if !times.is_empty() {
            m.add(
                &format!("launch_{name}"),
                times.iter().sum::<f64>() / times.len() as f64 / MS,
            );
        }
    }
    for (name, (a, b)) in [
        ("hot_cold", ("hot", "cold")),
        ("hot_warm", ("hot", "warm")),
        ("warm_cold", ("warm", "cold")),
    ] {
        if counts[b] > 0.0 {
            m.add(name, counts[a] / counts[b]);
        }
    }
    m.add(
        "launch_failures",
        launches.iter().filter(|l| l.latency_ns.is_none()).count() as f64,
    );
    let ok: Vec<f64> = launches
        .iter()
        .filter_map(|l| l.latency_ns)
        .map(|t| t as f64)
        .collect();
    ok.iter().sum::<f64>() / ok.len().max(1) as f64
}

pub(super) fn kill_metrics(
    m: &mut Metrics,
    kills: &Kills,
    lmkd_ran: bool,
    end: &Snapshot,
    start: &Snapshot,
) {
    let lmk: u64 = kills.lmk.values().sum();
    m.add("kills", (kills.am + lmk + kills.oom) as f64);
    m.add("kills_am", kills.am as f64);
    m.add("kills_oom", kills.oom as f64);
    m.maybe("oom_kill", end.delta(start, "oom_kill"));
    if lmkd_ran {
        m.add("kills_lmk", lmk as f64);
        for reason in lmkd::REASONS {
            let n = kills.lmk.get(reason).copied().unwrap_or(0) as f64;
            m.counters.push(Counter::new(
                &format!("kills_lmk_{reason}"),
                n,
                "count",
                Direction::None,
            ));
        }
    }
}

pub(super) fn reclaim_metrics(
    m: &mut Metrics,
    end: &Snapshot,
    start: &Snapshot,
    traced: Option<&reclaim_trace::Recorded>,
) {
    m.maybe("refault_anon", end.delta(start, "workingset_refault_anon"));
    m.maybe("refault_file", end.delta(start, "workingset_refault_file"));
    if let (Some(a), Some(b)) = (end.kswapd_ns, start.kswapd_ns) {
        m.add("kswapd_cpu", a.saturating_sub(b) as f64 / MS);
    }
    for class in ["kswapd", "direct", "anon", "file"] {
        m.efficiency(&format!("efficiency_{class}"), end, start, class);
    }
    if let (Some(d), Some(k)) = (
        end.delta(start, "pgscan_direct"),
        end.delta(start, "pgscan_kswapd"),
    ) {
        if d + k > 0.0 {
            m.add("direct_share", 100.0 * d / (d + k));
        }
    }
    let stalls = allocstall(&end.vm)
        .zip(allocstall(&start.vm))
        .map(|(a, b)| a.saturating_sub(b) as f64);
    m.maybe("allocstall", stalls);
    match traced {
        Some(t) => {
            let ms: Vec<f64> = t
                .stalls
                .iter()
                .map(|s| (s.end - s.begin) as f64 / MS)
                .collect();
            m.add("direct_reclaims", ms.len() as f64);
            m.add("direct_stall", ms.iter().fold(0.0, |a, b| a + b));
            for (name, lo, hi) in [
                ("direct_lt5ms", 0.0, 5.0),
                ("direct_5_50ms", 5.0, 50.0),
                ("direct_50_500ms", 50.0, 500.0),
                ("direct_gt500ms", 500.0, f64::INFINITY),
            ] {
                m.add(
                    name,
                    ms.iter().filter(|&&x| x >= lo && x < hi).count() as f64,
                );
            }
            m.add("trace_lost", t.lost as f64);
            if t.lost > 0 {
                m.said.push(("trace_lost", format!("the kernel overwrote {} direct-reclaim trace events: stall counts and times are too low (raise --trace-buffer)", t.lost)));
            }
        }
        None => m.maybe("direct_reclaims", stalls),
    }
    m.maybe("pswpin", end.delta(start, "pswpin"));
    m.maybe("pswpout", end.delta(start, "pswpout"));
    if let (Some(a), Some(b)) = (end.psi, start.psi) {
        m.add("psi_some", a.some_us.saturating_sub(b.some_us) as f64 / 1e3);
        m.add("psi_full", a.full_us.saturating_sub(b.full_us) as f64 / 1e3);
    }
    for (key, _) in [
        ("workingset_refault_anon", ()),
        ("workingset_refault_file", ()),
        ("pgscan_kswapd", ()),
        ("pswpin", ()),
    ] {
        if !end.vm.contains_key(key) {
            m.said.push(("counter_missing", format!("this kernel has no {key} in /proc/vmstat: what depends on it is missing, not zero")));
        }
    }
}

/// zram's compression at the cycle's end, over the zram swap devices.
pub(super) fn zram_metrics(m: &mut Metrics) {
    let devices = zram_swaps();
    if devices.is_empty() {
        return;
    }
    let field = |i: usize| {
        devices
            .iter()
            .map(|(_, f)| f.get(i).copied().unwrap_or(0))
            .sum::<u64>() as f64
    };
    if field(1) > 0.0 {
        m.add("zram_ratio", field(0) / field(1));
    }
    m.add("zram_used_max", field(4));
}

/// Time spent in direct reclaim (by any task) inside the window [from, to).
pub(super) fn stall_within(
    stalls: &[reclaim_trace::Stall],
    longest: u64,
    from: u64,
    to: u64,
) -> u64 {
    let end = stalls.partition_point(|s| s.begin < to);
    stalls[..end]
        .iter()
        .rev()
        .take_while(|s| s.begin + longest >= from)
        .map(|s| s.end.min(to).saturating_sub(s.begin.max(from)))
        .sum()
}

/// Every app's own accounting as columns, indexed by app.
pub(super) fn app_details(read: &[(Option<u64>, [Option<u64>; 3])]) -> serde_json::Value {
    let mut doc =
        serde_json::json!({"peak_bytes": read.iter().map(|(peak, _)| *peak).collect::<Vec<_>>()});
    for (i, (key, _)) in accounting::COUNTED.iter().enumerate() {
        doc[*key] = read
            .iter()
            .map(|(_, counted)| counted[i])
            .collect::<Vec<_>>()
            .into();
    }
    doc
}

/// Every launch as columns (one list per field), for the run's details; `stalls` None: not traced.
pub(super) fn launch_details(
    launches: &[Launch],
    stalls: Option<&[reclaim_trace::Stall]>,
) -> serde_json::Value {
    let longest = stalls.map_or(0, |s| s.iter().map(|s| s.end - s.begin).max().unwrap_or(0));
    let name = |s: Start| {
        STARTS
            .iter()
            .find(|(k, _)| *k == s)
            .map(|(_, n)| *n)
            .unwrap_or("cold")
    };
    let mut doc = serde_json::json!({
        "iteration": launches.iter().map(|l| l.iteration).collect::<Vec<_>>(),
        "app": launches.iter().map(|l| l.app).collect::<Vec<_>>(),
        "start": launches.iter().map(|l| name(l.start)).collect::<Vec<_>>(),
        "latency_ns": launches.iter().map(|l| l.latency_ns).collect::<Vec<_>>(),
        "majflt": launches.iter().map(|l| l.majflt).collect::<Vec<_>>(),
        "stall_ns": launches.iter().map(|l| {
            let (s, t) = (stalls?, l.latency_ns?);
            Some(stall_within(s, longest, l.requested_ns, l.requested_ns + t))
        }).collect::<Vec<_>>(),
    });
    for (i, key) in PER_LAUNCH.iter().enumerate() {
        doc[*key] = launches
            .iter()
            .map(|l| l.counters[i])
            .collect::<Vec<_>>()
            .into();
    }
    doc
}
