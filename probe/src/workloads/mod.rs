//! The catalogue of built-in workloads.

mod alloc_churn;
mod app_cycle;
mod children;
pub mod cpu;
mod ipc;
mod sys_build;
mod sys_spawn;

use crate::workload::Workload;

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
