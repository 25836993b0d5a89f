//! Workload characteristics from the kernel's perf events, counted over the
//! whole process tree of one run (inherited by every thread and child), on
//! request (`--perf-counters`): opening and inheriting them costs a run about
//! a millisecond, and a virtualised PMU makes every context switch and exec
//! of the counted tasks dearer (~0.25 ms per exec and counter pair on the VM
//! this was written on), which would perturb short or switch-heavy workloads.
//!
//! Software events (task clock, page faults, context switches, migrations)
//! exist on every kernel with perf events. Hardware events (cycles,
//! instructions, branches, cache references) need a PMU the kernel exposes;
//! many VMs have none, and then the run carries on without them and says why
//! in `note`.

use perf_event::events::{Event, Hardware, Software};
use perf_event::{Builder, Counter};
use serde_json::{Map, Value};

const SOFTWARE: [(&str, Software); 4] = [
    ("task_clock_ns", Software::TASK_CLOCK),
    ("page_faults", Software::PAGE_FAULTS),
    ("context_switches", Software::CONTEXT_SWITCHES),
    ("cpu_migrations", Software::CPU_MIGRATIONS),
];

const HARDWARE: [(&str, Hardware); 6] = [
    ("cycles", Hardware::CPU_CYCLES),
    ("instructions", Hardware::INSTRUCTIONS),
    ("branches", Hardware::BRANCH_INSTRUCTIONS),
    ("branch_misses", Hardware::BRANCH_MISSES),
    ("cache_references", Hardware::CACHE_REFERENCES),
    ("cache_misses", Hardware::CACHE_MISSES),
];

pub struct Counters {
    open: Vec<(&'static str, Counter)>,
    pub note: Option<String>,
}

/// Kernel time counts too, as `perf stat` counts it for root (context switches happen
/// there); where perf_event_paranoid forbids that, user space alone is counted.
fn open_one(event: impl Event + Copy, pid: libc::pid_t) -> std::io::Result<Counter> {
    let build = |exclude_kernel| {
        Builder::new(event)
            .observe_pid(pid)
            .any_cpu()
            .inherit(true)
            .exclude_kernel(exclude_kernel)
            .enabled(false)
            .enable_on_exec(true)
            .build()
    };
    build(false).or_else(|_| build(true))
}

fn open_all<E: Event + Copy>(
    events: &[(&'static str, E)],
    pid: libc::pid_t,
) -> std::io::Result<Vec<(&'static str, Counter)>> {
    events
        .iter()
        .map(|&(name, event)| Ok((name, open_one(event, pid)?)))
        .collect()
}

impl Counters {
    /// Counters on `pid`, a child stopped before its exec: they start counting at the exec.
    pub fn open(pid: libc::pid_t, requested: bool) -> Counters {
        if !requested {
            return Counters {
                open: vec![],
                note: None,
            };
        }
        let mut open = match open_all(&SOFTWARE, pid) {
            Ok(v) => v,
            Err(e) => {
                return Counters {
                    open: vec![],
                    note: Some(format!("perf events unavailable ({e})")),
                }
            }
        };
        let note = match open_all(&HARDWARE, pid) {
            Ok(v) => {
                open.extend(v);
                None
            }
            Err(e) => Some(format!(
                "hardware counters unavailable ({e}); IPC and miss rates left out"
            )),
        };
        Counters { open, note }
    }

    /// Counts scaled up where the kernel had to multiplex a counter; a counter that never
    /// ran is left out rather than reported as zero.
    pub fn read(&mut self) -> Map<String, Value> {
        let mut out = Map::new();
        for (name, counter) in &mut self.open {
            let Ok(c) = counter.read_count_and_time() else {
                continue;
            };
            if c.time_running == 0 {
                continue;
            }
            let scaled = c.count as f64 * c.time_enabled as f64 / c.time_running as f64;
            out.insert((*name).into(), Value::from(scaled.round()));
        }
        out
    }
}
