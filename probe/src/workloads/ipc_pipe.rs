//! ipc.pipe.pingpong: two processes pass a payload back and forth over a pair
//! of pipes. The echoing child adds one to every byte, and the parent checks
//! each reply, so a round trip that did not really cross both pipes fails
//! the run. Each round trip is timed on its own to give the distribution.

use crate::report::{Counter, Direction, Entry};
use crate::timing::{percentile, Stopwatch};
use crate::workload::{Digest, MetricSpec, OptionSpec, Options, Workload};
use rand::{RngCore, SeedableRng};
use rand_pcg::Pcg64;
use std::time::Instant;

pub struct PipePingPong;

static OPTIONS: &[OptionSpec] = &[
    OptionSpec { name: "roundtrips", default: "20000", help: "timed round trips" },
    OptionSpec { name: "warmup", default: "1000", help: "untimed round trips first" },
    OptionSpec { name: "payload", default: "64", help: "bytes sent each way per round trip" },
    OptionSpec { name: "seed", default: "1", help: "seed of the payload bytes" },
];

static METRICS: &[MetricSpec] = &[
    MetricSpec { name: "real_time", unit: "ns", direction: "lower", help: "mean wall time per round trip" },
    MetricSpec { name: "cpu_time", unit: "ns", direction: "lower", help: "CPU time of both processes per round trip" },
    MetricSpec { name: "items_per_second", unit: "1/s", direction: "higher", help: "round trips per second" },
    MetricSpec { name: "bytes_per_second", unit: "B/s", direction: "higher", help: "payload bytes moved per second, both ways" },
    MetricSpec { name: "latency_p50", unit: "ns", direction: "lower", help: "median round trip" },
    MetricSpec { name: "latency_p99", unit: "ns", direction: "lower", help: "99th percentile round trip" },
];

fn pipe() -> Result<(i32, i32), String> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe2: {}", std::io::Error::last_os_error()));
    }
    Ok((fds[0], fds[1]))
}

/// Reads or writes exactly buf.len() bytes; false on EOF or error.
fn full(fd: i32, buf: *mut u8, len: usize, write: bool) -> bool {
    let mut done = 0;
    while done < len {
        // SAFETY: buf points to at least len bytes owned by the caller.
        let n = unsafe {
            if write {
                libc::write(fd, buf.add(done) as *const libc::c_void, len - done)
            } else {
                libc::read(fd, buf.add(done) as *mut libc::c_void, len - done)
            }
        };
        if n <= 0 {
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        done += n as usize;
    }
    true
}

fn echo_child(rx: i32, tx: i32, payload: usize) -> ! {
    let mut buf = vec![0u8; payload];
    while full(rx, buf.as_mut_ptr(), payload, false) {
        for b in buf.iter_mut() {
            *b = b.wrapping_add(1);
        }
        if !full(tx, buf.as_mut_ptr(), payload, true) {
            break;
        }
    }
    // SAFETY: leaving the forked child without running the parent's destructors.
    unsafe { libc::_exit(0) }
}

impl Workload for PipePingPong {
    fn name(&self) -> &'static str {
        "ipc.pipe.pingpong"
    }
    fn description(&self) -> &'static str {
        "two processes ping-pong a payload over a pair of pipes; round-trip latency distribution"
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
    fn run(&self, opts: &Options) -> Result<Vec<Entry>, String> {
        let roundtrips = opts.bounded("roundtrips", 1, 1 << 32)?;
        let warmup = opts.bounded("warmup", 0, 1 << 32)?;
        let payload = opts.bounded("payload", 1, 1 << 24)? as usize;
        let mut rng = Pcg64::seed_from_u64(opts.u64("seed")?);
        let (down_rx, down_tx) = pipe()?;
        let (up_rx, up_tx) = pipe()?;
        // SAFETY: the probe is single-threaded here; the child only uses async-signal-safe calls.
        let child = unsafe { libc::fork() };
        if child < 0 {
            return Err(format!("fork: {}", std::io::Error::last_os_error()));
        }
        if child == 0 {
            unsafe {
                libc::close(down_tx);
                libc::close(up_rx);
            }
            echo_child(down_rx, up_tx, payload);
        }
        unsafe {
            libc::close(down_rx);
            libc::close(up_tx);
        }
        let mut out = vec![0u8; payload];
        let mut back = vec![0u8; payload];
        let mut samples = Vec::with_capacity(roundtrips as usize);
        let mut digest = Digest::new();
        let mut failure = None;
        let mut watch = Stopwatch::start(true);
        for i in 0..(warmup + roundtrips) {
            if i == warmup {
                watch = Stopwatch::start(true);
            }
            rng.fill_bytes(&mut out);
            let t0 = Instant::now();
            if !full(down_tx, out.as_mut_ptr(), payload, true) || !full(up_rx, back.as_mut_ptr(), payload, false) {
                failure = Some("the echoing process went away".to_string());
                break;
            }
            let ns = t0.elapsed().as_nanos() as u64;
            if out.iter().zip(&back).any(|(a, b)| a.wrapping_add(1) != *b) {
                failure = Some(format!("round trip {i} came back altered"));
                break;
            }
            if i >= warmup {
                samples.push(ns);
                digest.word(back.iter().fold(0u64, |acc, &b| acc.wrapping_mul(31).wrapping_add(b as u64)));
            }
        }
        unsafe { libc::close(down_tx) };
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(child, &mut status, 0) };
        unsafe { libc::close(up_rx) };
        let (wall, cpu) = watch.elapsed();
        if let Some(msg) = failure {
            return Err(msg);
        }
        if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
            return Err(format!("the echoing process ended badly (wait status {status})"));
        }
        samples.sort_unstable();
        let n = roundtrips as f64;
        Ok(vec![Entry {
            name: "ipc.pipe.pingpong".into(),
            iterations: roundtrips,
            threads: 1,
            real_time_ns: wall / n,
            cpu_time_ns: cpu / n,
            items_per_second: Some(n / (wall / 1e9)),
            bytes_per_second: Some(2.0 * payload as f64 * n / (wall / 1e9)),
            counters: vec![
                Counter::new("latency_p50", percentile(&samples, 0.50), "ns", Direction::Lower),
                Counter::new("latency_p99", percentile(&samples, 0.99), "ns", Direction::Lower),
            ],
            checksum: digest.hex(),
        }])
    }
}
