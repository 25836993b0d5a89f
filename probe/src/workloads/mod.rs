//! The catalogue of built-in workloads.

mod alloc_churn;
mod app_cycle;
mod children;
pub mod cpu;
mod ipc;
mod sys_build;
mod sys_spawn;

pub use children::ChildError;
pub use ipc::channel::ChannelError;

use crate::workload::Workload;

/// A fresh anonymous read-write mapping of `bytes`, kept for the process's life; `sharing` is
/// `MAP_PRIVATE` (spawn's address space, the app cycle's apps) or `MAP_SHARED` (memory an IPC
/// workload shares with the children it forks): the one way the workloads get such memory.
/// A mapping the kernel refused.
#[derive(Debug, thiserror::Error)]
#[error("mapping {bytes} bytes: {source}")]
pub struct MapError {
    bytes: usize,
    source: std::io::Error,
}

pub fn map_anonymous(bytes: usize, sharing: libc::c_int) -> Result<*mut u8, MapError> {
    // SAFETY: a new mapping that nothing else refers to.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            sharing | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(MapError {
            bytes,
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(p as *mut u8)
}

pub fn all() -> Vec<&'static dyn Workload> {
    let mut all: Vec<&'static dyn Workload> = vec![
        &alloc_churn::AllocChurn,
        &ipc::PipePingPong,
        &sys_spawn::Spawn,
        &sys_build::Build,
        &app_cycle::AppCycle,
    ];
    all.extend(ipc::all());
    all.extend(cpu::all());
    all
}
