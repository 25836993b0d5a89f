//! The priority-inheritance check of the latency test, made real on Linux: a
//! SCHED_OTHER thread holds a lock while a SCHED_FIFO thread waits for it.
//! With a priority-inheritance mutex (PTHREAD_PRIO_INHERIT: FUTEX_LOCK_PI) the
//! kernel must run the holder at the waiter's priority, so a third real-time
//! task cannot keep the lock from being released; a plain mutex leaves the
//! holder at its own priority, which is the inversion. The holder's effective
//! priority is read from /proc/self/task/TID/stat (negative = real-time).

use crate::workload::{failed, WorkloadError};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const LOCKS: &[&str] = &["pi", "plain", "off"];

pub struct Finding {
    /// the real-time priority the holder ran at while the waiter waited; None: it was not boosted
    pub holder_priority: Option<i64>,
    pub text: String,
}

struct Mutex(UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: a pthread mutex is made to be shared between threads.
unsafe impl Sync for Mutex {}
unsafe impl Send for Mutex {}

impl Mutex {
    fn new(protocol: i32) -> Result<Arc<Mutex>, WorkloadError> {
        let m = Arc::new(Mutex(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER)));
        // SAFETY: initialising a mutex at its final address (inside the Arc) from a fresh attribute.
        let rc = unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            libc::pthread_mutexattr_init(&mut attr);
            libc::pthread_mutexattr_setprotocol(&mut attr, protocol);
            let rc = libc::pthread_mutex_init(m.0.get(), &attr);
            libc::pthread_mutexattr_destroy(&mut attr);
            rc
        };
        if rc != 0 {
            return Err(WorkloadError::io(
                "pthread_mutex_init",
                std::io::Error::from_raw_os_error(rc),
            ));
        }
        Ok(m)
    }
    fn lock(&self) {
        // SAFETY: an initialised mutex.
        unsafe { libc::pthread_mutex_lock(self.0.get()) };
    }
    fn unlock(&self) {
        // SAFETY: called by the thread that locked it.
        unsafe { libc::pthread_mutex_unlock(self.0.get()) };
    }
}

fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// (state, effective priority) of a thread of this process, from its stat line.
fn thread_state(tid: i32) -> Option<(char, i64)> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let fields: Vec<&str> = stat
        .get(stat.rfind(')')? + 2..)?
        .split_whitespace()
        .collect();
    // after the command: state is field 3 of the line, priority field 18
    Some((
        fields.first()?.chars().next()?,
        fields.get(15)?.parse().ok()?,
    ))
}

pub fn set_policy(policy: i32, priority: i32) -> Result<(), WorkloadError> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: changing the calling thread's own policy.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(WorkloadError::last_os("sched_setscheduler"));
    }
    Ok(())
}

/// Runs the check with a priority-inheritance (`pi`) or plain mutex and a waiter at `priority`.
pub fn check(lock: &str, priority: i32) -> Result<Finding, WorkloadError> {
    let mutex = Mutex::new(if lock == "pi" {
        libc::PTHREAD_PRIO_INHERIT
    } else {
        libc::PTHREAD_PRIO_NONE
    })?;
    let holder_tid = Arc::new(AtomicI32::new(0));
    let release = Arc::new(AtomicBool::new(false));
    let holder = {
        let (mutex, tid, release) = (mutex.clone(), holder_tid.clone(), release.clone());
        std::thread::spawn(move || {
            mutex.lock();
            tid.store(gettid(), Ordering::Release);
            while !release.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_micros(200));
            }
            mutex.unlock();
        })
    };
    while holder_tid.load(Ordering::Acquire) == 0 {
        std::thread::yield_now();
    }
    let waiter_tid = Arc::new(AtomicI32::new(0));
    let waiter = {
        let (mutex, tid) = (mutex.clone(), waiter_tid.clone());
        std::thread::spawn(move || -> Result<(), WorkloadError> {
            set_policy(libc::SCHED_FIFO, priority)?;
            tid.store(gettid(), Ordering::Release);
            mutex.lock();
            mutex.unlock();
            Ok(())
        })
    };
    let holder_thread = holder_tid.load(Ordering::Acquire);
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut blocked = false;
    let mut priority_seen = thread_state(holder_thread).map_or(0, |s| s.1);
    while Instant::now() < deadline && !waiter.is_finished() {
        let waiter_now = waiter_tid.load(Ordering::Acquire);
        blocked = blocked
            || (waiter_now != 0 && thread_state(waiter_now).is_some_and(|(state, _)| state == 'S'));
        priority_seen = thread_state(holder_thread).map_or(priority_seen, |s| s.1);
        if priority_seen < 0 {
            break; // boosted
        }
        if blocked {
            // the waiter sleeps on the lock: give the kernel a moment to boost before judging
            std::thread::sleep(Duration::from_millis(20));
            priority_seen = thread_state(holder_thread).map_or(priority_seen, |s| s.1);
            break;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    release.store(true, Ordering::Release);
    holder
        .join()
        .map_err(|_| failed!("the holding thread panicked"))?;
    waiter
        .join()
        .map_err(|_| failed!("the waiting thread panicked"))??;
    if !blocked && priority_seen >= 0 {
        return Err(failed!("the SCHED_FIFO waiter never blocked on the lock"));
    }
    let boosted = priority_seen < 0;
    let kind = if lock == "pi" {
        "a priority-inheritance mutex"
    } else {
        "a plain mutex"
    };
    let text = if boosted {
        format!("the SCHED_OTHER holder of {kind} ran at real-time priority {} while a SCHED_FIFO/{priority} thread waited", -1 - priority_seen)
    } else {
        format!("the SCHED_OTHER holder of {kind} stayed at priority {priority_seen} while a SCHED_FIFO/{priority} thread waited (priority inversion)")
    };
    Ok(Finding {
        holder_priority: boosted.then_some(-1 - priority_seen),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn may_use_fifo() -> bool {
        std::thread::spawn(|| set_policy(libc::SCHED_FIFO, 1).is_ok())
            .join()
            .unwrap()
    }

    #[test]
    fn pi_mutex_boosts_the_holder_and_a_plain_mutex_does_not() {
        if !may_use_fifo() {
            eprintln!("skipped: no SCHED_FIFO privilege");
            return;
        }
        let pi = check("pi", 3).unwrap();
        assert_eq!(pi.holder_priority, Some(3), "{}", pi.text);
        assert!(pi.text.contains("real-time priority 3 "), "{}", pi.text);
        let plain = check("plain", 3).unwrap();
        assert_eq!(plain.holder_priority, None, "{}", plain.text);
        assert!(
            plain.text.ends_with("(priority inversion)"),
            "{}",
            plain.text
        );
    }

    #[test]
    fn stat_lines_parse_state_and_priority() {
        let (state, priority) = thread_state(gettid()).unwrap();
        assert_eq!(state, 'R');
        assert!((0..40).contains(&priority));
    }
}
