//! Which shared objects the workload's process really mapped, from the kernel's
//! own record of its executable mappings (perf `MMAP2` records of a dummy event,
//! as `perf record` learns where libraries lie). It proves that a preloaded
//! allocator or shim was loaded, or that it was not, without stopping or
//! slowing the process: the kernel writes a record only when code is mapped.
//!
//! Only the launched process is watched (not its children), and only its last
//! program image: a wrapper such as `taskset` that execs the workload leaves the
//! workload's libraries, not its own.

use perf_event::data::Record;
use perf_event::events::Software;
use perf_event::{Builder, Sampler};
use std::os::unix::ffi::OsStrExt;

const PERF_RECORD_COMM: u32 = 3;
/// The kernel marks a COMM record written by exec with this `misc` bit.
const COMM_EXEC: u16 = 1 << 13;

pub struct Mapped {
    sampler: Option<Sampler>,
    pub note: Option<String>,
}

impl Mapped {
    /// Watches `pid`, a child stopped before its exec; records start at the exec.
    pub fn open(pid: libc::pid_t, requested: bool) -> Mapped {
        if !requested {
            return Mapped {
                sampler: None,
                note: None,
            };
        }
        let built = Builder::new(Software::DUMMY)
            .observe_pid(pid)
            .any_cpu()
            .exclude_kernel(true)
            .mmap(true)
            .mmap2(true)
            .comm(true)
            .comm_exec(true)
            .enabled(false)
            .enable_on_exec(true)
            .build()
            .and_then(|counter| counter.sampled(64 * 1024));
        match built {
            Ok(sampler) => Mapped {
                sampler: Some(sampler),
                note: None,
            },
            Err(e) => Mapped {
                sampler: None,
                note: Some(format!(
                    "cannot see which libraries the workload mapped: perf events refused ({e})"
                )),
            },
        }
    }

    /// Paths of the files the last program image mapped executable, in mapping order;
    /// None when nothing was watched.
    pub fn read(&mut self) -> Option<Vec<String>> {
        let sampler = self.sampler.as_mut()?;
        let mut paths: Vec<String> = Vec::new();
        let mut lost = false;
        while let Some(record) = sampler.next_record() {
            let exec = record.ty() == PERF_RECORD_COMM && record.misc() & COMM_EXEC != 0;
            match record.parse_record() {
                Ok(Record::Comm(_)) if exec => paths.clear(),
                Ok(Record::Mmap2(m)) => {
                    let path = String::from_utf8_lossy(m.filename_os().as_bytes()).into_owned();
                    if path.starts_with('/') && !paths.contains(&path) {
                        paths.push(path);
                    }
                }
                Ok(Record::Lost(_)) => lost = true,
                _ => {}
            }
        }
        if lost {
            self.note = Some("some mapping records were lost (the ring buffer filled)".into());
        }
        Some(paths)
    }
}
