//! `--trace 1`: on the first deadline miss of a run, a line in the kernel's
//! trace buffer (trace_marker) naming the mechanism, pair, iteration and CPUs,
//! then tracing stops, so the events that led to the miss stay in the buffer.
//! Tracing is switched on when the run starts (whatever events the user has
//! enabled are recorded; the marker at least). The run then says so, as
//! Android's binderLatency prints "deadline triggered: halt & stop trace": the
//! miss is made in a forked client, so its line is left in a shared page for
//! the parent to read once the pairs have ended (`stopped`).

use crate::workload::{refused, WorkloadError};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

use super::channel::shared;

/// The shared page: the length of the first miss's line (0: none yet), then the line.
const PAGE: usize = 4096;
const TEXT: usize = 8;

/// Where the kernel's trace files live: tracefs, or tracefs under debugfs on older setups.
const ROOTS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

pub struct Tracer {
    root: &'static str,
    marker: File,
    switch: File,
    said: *mut u8, // PAGE bytes, shared with the forked clients
}

impl Tracer {
    /// Opens the trace marker and switches tracing on; Err says why there is no tracing.
    pub fn start() -> Result<Tracer, WorkloadError> {
        let root = ROOTS
            .iter()
            .find(|r| std::path::Path::new(r).join("trace_marker").exists())
            .copied()
            .ok_or_else(|| refused!("neither tracefs (/sys/kernel/tracing) nor debugfs (/sys/kernel/debug/tracing) is mounted; as root: mount -t tracefs nodev /sys/kernel/tracing"))?;
        let open = |name: &str| {
            OpenOptions::new()
                .write(true)
                .open(format!("{root}/{name}"))
                .map_err(|e| WorkloadError::io(format!("{root}/{name}"), e))
        };
        let mut tracer = Tracer {
            root,
            marker: open("trace_marker")?,
            switch: open("tracing_on")?,
            said: shared(PAGE)?,
        };
        tracer
            .switch
            .write_all(b"1")
            .map_err(|e| WorkloadError::io(format!("{root}/tracing_on"), e))?;
        Ok(tracer)
    }

    /// Writes the marker, then stops tracing, and leaves the line for `stopped`. Called once
    /// per run (by the first miss).
    pub fn miss(&self, text: &str) {
        // Best effort: a failed write must not turn a measured miss into a failed run.
        let _ = (&self.marker).write_all(format!("benchlab: {text}\n").as_bytes());
        let _ = (&self.switch).write_all(b"0");
        let line = &text.as_bytes()[..text.len().min(PAGE - TEXT)];
        // SAFETY: the page is PAGE bytes long and mapped for the process's life; only the
        // first miss writes it, and the parent reads it after every client has ended.
        unsafe {
            std::ptr::copy_nonoverlapping(line.as_ptr(), self.said.add(TEXT), line.len());
            (*(self.said as *const AtomicU32)).store(line.len() as u32, Ordering::Release);
        }
    }

    /// What the run says once its pairs have ended, where a miss stopped tracing.
    pub fn stopped(&self) -> Option<String> {
        // SAFETY: as in `miss`; the length never exceeds the page.
        let line = unsafe {
            let len = (*(self.said as *const AtomicU32)).load(Ordering::Acquire) as usize;
            std::slice::from_raw_parts(self.said.add(TEXT), len.min(PAGE - TEXT))
        };
        (!line.is_empty()).then(|| {
            format!(
                "deadline triggered: halt & stop trace: {} (marked in {root}/trace; {root}/tracing_on left at 0)",
                String::from_utf8_lossy(line),
                root = self.root
            )
        })
    }
}
