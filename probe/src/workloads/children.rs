//! Child processes of a workload: forked with their end of a channel, reaped
//! with a reason when they did not exit 0, and the pipes that connect them.
//! Shared by the IPC family, the pipe ping-pong and process spawn.

use crate::workload::WorkloadError;
use std::fs::File;
use std::io;
use std::os::fd::FromRawFd;

/// Why a child could not be made or did not end cleanly, naming it (`what`) as the workload does.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    /// `fork` or `pipe2` refused.
    #[error("{call}: {source}")]
    Call {
        call: &'static str,
        source: io::Error,
    },
    #[error("waiting for the {what}: {source}")]
    Wait { what: String, source: io::Error },
    #[error("the {what} was killed by signal {signal}")]
    Killed { what: String, signal: libc::c_int },
    #[error("the {what} did not exit 0 (exit status {code}{})", if *.code == 127 { ": it could not exec" } else { "" })]
    Exited { what: String, code: libc::c_int },
}

/// Forks a child that takes `mine` and runs `body` with it, while `theirs`
/// (the parent's end) is closed in the child, so that neither process keeps
/// the other's descriptors open. The child leaves with _exit: 0 when `body`
/// succeeded, 1 after printing its error as `label: error`. The parent keeps
/// `theirs` and drops `mine`.
pub fn fork_with<M, T>(
    label: &str,
    mine: M,
    theirs: T,
    body: impl FnOnce(M) -> Result<(), WorkloadError>,
) -> Result<(libc::pid_t, T), ChildError> {
    // SAFETY: the probe is single-threaded when it forks; the child leaves with _exit.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(ChildError::Call {
            call: "fork",
            source: io::Error::last_os_error(),
        });
    }
    if child == 0 {
        drop(theirs);
        let code = match body(mine) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("{label}: {e}");
                1
            }
        };
        // SAFETY: leaving the forked child without running the parent's destructors.
        unsafe { libc::_exit(code) }
    }
    drop(mine);
    Ok((child, theirs))
}

/// Waits for a child and says how it ended when that was not a clean exit.
pub fn reap(pid: libc::pid_t, what: &str) -> Result<(), ChildError> {
    let mut status = 0;
    // SAFETY: waiting for our own child.
    if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
        return Err(ChildError::Wait {
            what: what.into(),
            source: io::Error::last_os_error(),
        });
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else if libc::WIFSIGNALED(status) {
        Err(ChildError::Killed {
            what: what.into(),
            signal: libc::WTERMSIG(status),
        })
    } else {
        Err(ChildError::Exited {
            what: what.into(),
            code: libc::WEXITSTATUS(status),
        })
    }
}

/// A pipe as (read end, write end), both close-on-exec.
pub fn pipe() -> Result<(File, File), ChildError> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two-element array; each end is owned by one File from here on.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(ChildError::Call {
                call: "pipe2",
                source: io::Error::last_os_error(),
            });
        }
        Ok((File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])))
    }
}
