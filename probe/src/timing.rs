//! Clocks read inside the native process: wall time from CLOCK_MONOTONIC and
//! CPU time from getrusage, so no interpreter sits between a clock and the work.

use std::time::Instant;

/// CPU time (user + system) of this process and, optionally, its reaped children.
pub fn cpu_time_ns(include_children: bool) -> f64 {
    let mut total = rusage_ns(libc::RUSAGE_SELF);
    if include_children {
        total += rusage_ns(libc::RUSAGE_CHILDREN);
    }
    total
}

fn rusage_ns(who: libc::c_int) -> f64 {
    // SAFETY: getrusage writes into a zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1e9 + t.tv_usec as f64 * 1e3;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Wall and CPU clocks started together.
pub struct Stopwatch {
    wall: Instant,
    cpu_ns: f64,
    include_children: bool,
}

impl Stopwatch {
    pub fn start(include_children: bool) -> Self {
        Stopwatch {
            wall: Instant::now(),
            cpu_ns: cpu_time_ns(include_children),
            include_children,
        }
    }

    /// (wall ns, cpu ns) since start.
    pub fn elapsed(&self) -> (f64, f64) {
        (
            self.wall.elapsed().as_nanos() as f64,
            cpu_time_ns(self.include_children) - self.cpu_ns,
        )
    }
}

/// Nearest-rank percentile of a sorted slice (q in 0..=1).
pub fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&v, 1.0), 100.0);
        assert!(percentile(&[], 0.5).is_nan());
    }
}
