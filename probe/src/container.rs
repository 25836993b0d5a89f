//! A container without a container runtime: what `environment = "container"` means.
//!
//! The launcher enters new mount, UTS, network and PID namespaces before it forks
//! (so its child is PID 1 of the new PID namespace), and the child, before it is
//! released, mounts `/proc`, `/sys`, `/dev` and a `/tmp` inside a Debian root
//! filesystem, binds the host paths the run needs (the probe, the shim, the
//! workload's folder) read-only at the same place, brings up loopback, names
//! itself, and chroots. The launcher itself stays on the host's file system, so
//! the measuring (cgroups, perf events, wait4) is the same as for a local run;
//! everything mounted disappears with the namespace when the run ends.
//!
//! Written by hand because the run must stay the launcher's own child (a runtime
//! such as runc or `unshare --fork` would put its process between them, and
//! wait4, perf and the mapped-library record would see that process instead).

use std::ffi::CString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Why a container could not be made or entered: the launcher prints it after its own context
/// ("cannot make the container's namespaces: ...", "cannot enter the container: ...").
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    #[error("{} contains a NUL byte", .0.display())]
    NulByte(PathBuf),
    /// A step (a mount, a folder made, chroot) the kernel refused, named as `what`.
    #[error("{what}: {source}")]
    Refused { what: String, source: io::Error },
}

impl ContainerError {
    /// The step `what`, refused with the last OS error.
    fn last_os(what: impl Into<String>) -> ContainerError {
        ContainerError::Refused {
            what: what.into(),
            source: io::Error::last_os_error(),
        }
    }
}

pub struct Container {
    pub rootfs: PathBuf,
    pub binds: Vec<PathBuf>,
}

fn cstring(path: &Path) -> Result<CString, ContainerError> {
    CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| ContainerError::NulByte(path.to_path_buf()))
}

fn check(what: &str, r: libc::c_int) -> Result<(), ContainerError> {
    if r == 0 {
        Ok(())
    } else {
        Err(ContainerError::last_os(what))
    }
}

fn mount(
    source: &str,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
) -> Result<(), ContainerError> {
    let (src, dst) = (CString::new(source).unwrap_or_default(), cstring(target)?);
    let fs = fstype.map(|f| CString::new(f).unwrap_or_default());
    // SAFETY: NUL-terminated strings that outlive the call; no data argument.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            dst.as_ptr(),
            fs.as_ref().map_or(std::ptr::null(), |f| f.as_ptr()),
            flags,
            std::ptr::null(),
        )
    };
    check(&format!("mount {source} on {}", target.display()), r)
}

/// In the launcher, before it forks. Returns the launcher's own PID namespace, to go back to
/// once the child is forked (see `back_to_own_pid_namespace`).
pub fn enter_namespaces() -> Result<std::fs::File, ContainerError> {
    let own = fs::File::open("/proc/self/ns/pid").map_err(|source| ContainerError::Refused {
        what: "open /proc/self/ns/pid".into(),
        source,
    })?;
    // SAFETY: plain system calls on this single-threaded process.
    unsafe {
        check(
            "unshare",
            libc::unshare(
                libc::CLONE_NEWNS | libc::CLONE_NEWUTS | libc::CLONE_NEWNET | libc::CLONE_NEWPID,
            ),
        )?;
    }
    // nothing mounted from here on may reach the host's mount table
    mount(
        "none",
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
    )?;
    Ok(own)
}

/// In the launcher, after its child (PID 1 of the new namespace) is forked. `unshare(CLONE_NEWPID)`
/// leaves the launcher's *children* to be made in the new namespace, and the kernel refuses to make
/// a thread there (`clone(CLONE_THREAD)`: EINVAL), which the memory sampler needs: entering the
/// launcher's own namespace again puts its later children, threads included, back beside it.
pub fn back_to_own_pid_namespace(own: &std::fs::File) -> Result<(), ContainerError> {
    use std::os::fd::AsRawFd;
    // SAFETY: a namespace descriptor we opened and still own.
    check("setns to the launcher's own PID namespace", unsafe {
        libc::setns(own.as_raw_fd(), libc::CLONE_NEWPID)
    })
}

impl Container {
    /// In the child (PID 1 of the new namespace), before it waits to be released.
    pub fn enter(&self, cwd: &Path) -> Result<(), ContainerError> {
        let inside = |p: &Path| self.rootfs.join(p.strip_prefix("/").unwrap_or(p));
        for dir in ["proc", "sys", "dev", "tmp"] {
            fs::create_dir_all(inside(Path::new(dir))).map_err(|source| {
                ContainerError::Refused {
                    what: format!("create {dir} in the root filesystem"),
                    source,
                }
            })?;
        }
        mount(
            "proc",
            &inside(Path::new("proc")),
            Some("proc"),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        )?;
        mount(
            "/sys",
            &inside(Path::new("sys")),
            None,
            libc::MS_BIND | libc::MS_REC,
        )?;
        mount(
            "/dev",
            &inside(Path::new("dev")),
            None,
            libc::MS_BIND | libc::MS_REC,
        )?;
        mount(
            "tmpfs",
            &inside(Path::new("tmp")),
            Some("tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
        )?;
        // after /tmp's tmpfs, so that a bound path under /tmp (a checkout there) stays visible
        for bind in &self.binds {
            let target = inside(bind);
            if bind.is_dir() {
                fs::create_dir_all(&target).map_err(|source| ContainerError::Refused {
                    what: format!("create {}", target.display()),
                    source,
                })?;
            } else {
                if let Some(parent) = target.parent() {
                    fs::create_dir_all(parent).map_err(|source| ContainerError::Refused {
                        what: format!("create {}", parent.display()),
                        source,
                    })?;
                }
                fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&target)
                    .map_err(|source| ContainerError::Refused {
                        what: format!("create {}", target.display()),
                        source,
                    })?;
            }
            let source = bind.to_string_lossy();
            mount(&source, &target, None, libc::MS_BIND | libc::MS_REC)?;
            mount(
                &source,
                &target,
                None,
                libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY,
            )?;
        }
        let name = b"benchlab-container";
        // SAFETY: a byte string and its length.
        check("sethostname", unsafe {
            libc::sethostname(name.as_ptr() as *const libc::c_char, name.len())
        })?;
        loopback_up()?;
        let root = cstring(&self.rootfs)?;
        // SAFETY: a NUL-terminated path.
        check("chroot", unsafe { libc::chroot(root.as_ptr()) })?;
        // the folder the run was started in, now seen inside the root: a workload's `cwd` is always
        // bound in; a run without one started wherever benchlab was, which the container may lack
        let dir = cstring(if cwd.is_dir() { cwd } else { Path::new("/") })?;
        // SAFETY: a NUL-terminated path.
        check("chdir", unsafe { libc::chdir(dir.as_ptr()) })
    }
}

/// A new network namespace has only loopback, and down.
fn loopback_up() -> Result<(), ContainerError> {
    // SAFETY: a socket used for two interface ioctls on a zeroed ifreq we own, then closed.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return Err(ContainerError::last_os("socket"));
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        let mut r = libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req);
        if r == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            r = libc::ioctl(sock, libc::SIOCSIFFLAGS, &req);
        }
        libc::close(sock);
        check("bring up loopback", r)
    }
}
