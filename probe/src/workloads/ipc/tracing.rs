//! `--trace 1`: on the first deadline miss of a run, a line in the kernel's
//! trace buffer (trace_marker) naming the mechanism, pair, iteration and CPUs,
//! then tracing stops, so the events that led to the miss stay in the buffer.
//! Tracing is switched on when the run starts (whatever events the user has
//! enabled are recorded; the marker at least).

use std::fs::{File, OpenOptions};
use std::io::Write;

/// Where the kernel's trace files live: tracefs, or tracefs under debugfs on older setups.
const ROOTS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

pub struct Tracer {
    marker: File,
    switch: File,
}

impl Tracer {
    /// Opens the trace marker and switches tracing on; Err says why there is no tracing.
    pub fn start() -> Result<Tracer, String> {
        let root = ROOTS
            .iter()
            .find(|r| std::path::Path::new(r).join("trace_marker").exists())
            .ok_or("neither tracefs (/sys/kernel/tracing) nor debugfs (/sys/kernel/debug/tracing) is mounted; as root: mount -t tracefs nodev /sys/kernel/tracing")?;
        let open = |name: &str| {
            OpenOptions::new()
                .write(true)
                .open(format!("{root}/{name}"))
                .map_err(|e| format!("{root}/{name}: {e}"))
        };
        let mut tracer = Tracer {
            marker: open("trace_marker")?,
            switch: open("tracing_on")?,
        };
        tracer
            .switch
            .write_all(b"1")
            .map_err(|e| format!("{root}/tracing_on: {e}"))?;
        Ok(tracer)
    }

    /// Writes the marker, then stops tracing.
    pub fn miss(&self, text: &str) {
        // Best effort: a failed write must not turn a measured miss into a failed run.
        let _ = (&self.marker).write_all(format!("benchlab: {text}\n").as_bytes());
        let _ = (&self.switch).write_all(b"0");
    }
}
