//! The IPC mechanisms Linux programs really use, behind one request/reply
//! interface, so that every IPC workload drives them with the same protocol,
//! payloads, warm-up and timer: pipes, Unix stream and seqpacket sockets,
//! eventfd signalling over shared memory, and a shared-memory slot per
//! direction with futex wait/wake (the payload is never copied through the
//! kernel). All waits block; spinning is the explicit `Spinning` wrapper.
//!
//! Both ends are made before the fork; each process keeps its own end and
//! drops the other (which closes that end's descriptors in that process only).
//! Shared memory stays mapped until the process exits.

use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicU32, Ordering};

pub trait Channel: Send {
    /// Sends exactly `data`.
    fn send(&mut self, data: &[u8]) -> Result<(), ChannelError>;
    /// Receives exactly `data.len()` bytes (the protocol fixes every message's size).
    fn recv(&mut self, data: &mut [u8]) -> Result<(), ChannelError>;
    /// Whether a message is waiting, without blocking (what a spinning receiver polls).
    fn ready(&self) -> bool;
}

/// The explicit spinning variant of any channel: each receive polls for up to
/// `limit` before it blocks. Bounded, so a spinner sharing a CPU with the other
/// end (or a SCHED_FIFO spinner) cannot starve it for long.
pub struct Spinning {
    pub inner: Box<dyn Channel>,
    pub limit: std::time::Duration,
}

impl Channel for Spinning {
    fn send(&mut self, data: &[u8]) -> Result<(), ChannelError> {
        self.inner.send(data)
    }

    fn recv(&mut self, data: &mut [u8]) -> Result<(), ChannelError> {
        let start = std::time::Instant::now();
        while !self.inner.ready() && start.elapsed() < self.limit {
            std::hint::spin_loop();
        }
        self.inner.recv(data)
    }

    fn ready(&self) -> bool {
        self.inner.ready()
    }
}

/// `channel`, spinning for up to `spin_us` microseconds before each blocking receive (0: never spins).
pub fn with_spin(channel: Box<dyn Channel>, spin_us: u64) -> Box<dyn Channel> {
    if spin_us == 0 {
        return channel;
    }
    Box::new(Spinning {
        inner: channel,
        limit: std::time::Duration::from_micros(spin_us),
    })
}

/// Whether `fd` has something to read now.
fn readable(fd: i32) -> bool {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd we own, zero timeout.
    unsafe { libc::poll(&mut poll, 1, 0) > 0 }
}

pub type Pair = (Box<dyn Channel>, Box<dyn Channel>);

pub struct Mechanism {
    pub name: &'static str,
    /// (client end, server end) for messages of up to `max` bytes.
    pub make: fn(max: usize) -> Result<Pair, ChannelError>,
    /// Why only one pair may run at once, for a mechanism with that limit (binder).
    pub one_pair: Option<&'static str>,
}

pub static MECHANISMS: &[Mechanism] = &[
    Mechanism {
        name: "pipe",
        make: pipes,
        one_pair: None,
    },
    Mechanism {
        name: "unix",
        make: |_| socket_pair(libc::SOCK_STREAM),
        one_pair: None,
    },
    Mechanism {
        name: "seqpacket",
        make: |_| socket_pair(libc::SOCK_SEQPACKET),
        one_pair: None,
    },
    Mechanism {
        name: "eventfd",
        make: eventfd_shm,
        one_pair: None,
    },
    Mechanism {
        name: "futex",
        make: futex_slots,
        one_pair: None,
    },
    Mechanism {
        name: "binder",
        make: super::binder::binder_pair,
        one_pair: Some("a binder device has one context manager"),
    },
];

/// Why a channel could not be made or could not carry a message.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// A system call that failed, named.
    #[error("{call}: {source}")]
    Os {
        call: &'static str,
        source: std::io::Error,
    },
    #[error("the other end closed")]
    Closed,
    /// A seqpacket message the kernel split on the way out.
    #[error("a {len}-byte message went out as {sent} bytes")]
    SentTorn { len: usize, sent: usize },
    /// A seqpacket message of another size than the one sent.
    #[error("a message of {got} bytes where {len} were sent")]
    ReceivedTorn { got: usize, len: usize },
    #[error(transparent)]
    Binder(#[from] super::binder::BinderError),
    #[error(transparent)]
    Map(#[from] crate::workloads::MapError),
    #[error(transparent)]
    Child(#[from] crate::workloads::ChildError),
}

fn os_error(call: &'static str) -> ChannelError {
    ChannelError::Os {
        call,
        source: std::io::Error::last_os_error(),
    }
}

fn interrupted() -> bool {
    std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
}

// ---------------------------------------------------------------- descriptors

/// A byte stream or message socket: `rx` and `tx` may be the same descriptor.
struct Fds {
    rx: i32,
    tx: i32,
    messages: bool, // seqpacket: one write and one read per message
}

impl Drop for Fds {
    fn drop(&mut self) {
        // SAFETY: descriptors this end owns.
        unsafe {
            libc::close(self.rx);
            if self.tx != self.rx {
                libc::close(self.tx);
            }
        }
    }
}

impl Channel for Fds {
    fn send(&mut self, data: &[u8]) -> Result<(), ChannelError> {
        let mut done = 0;
        while done < data.len() {
            // SAFETY: the rest of a slice we borrow.
            let n = unsafe {
                libc::write(
                    self.tx,
                    data[done..].as_ptr() as *const libc::c_void,
                    data.len() - done,
                )
            };
            if n < 0 && interrupted() {
                continue;
            }
            if n <= 0 {
                return Err(os_error("send"));
            }
            done += n as usize;
            if self.messages && done != data.len() {
                return Err(ChannelError::SentTorn {
                    len: data.len(),
                    sent: done,
                });
            }
        }
        Ok(())
    }

    fn recv(&mut self, data: &mut [u8]) -> Result<(), ChannelError> {
        let mut done = 0;
        while done < data.len() {
            // SAFETY: the rest of a slice we borrow mutably.
            let n = unsafe {
                libc::read(
                    self.rx,
                    data[done..].as_mut_ptr() as *mut libc::c_void,
                    data.len() - done,
                )
            };
            if n < 0 && interrupted() {
                continue;
            }
            if n < 0 {
                return Err(os_error("recv"));
            }
            if n == 0 {
                return Err(ChannelError::Closed);
            }
            done += n as usize;
            if self.messages && done != data.len() {
                return Err(ChannelError::ReceivedTorn {
                    got: done,
                    len: data.len(),
                });
            }
        }
        Ok(())
    }

    fn ready(&self) -> bool {
        readable(self.rx)
    }
}

fn pipe() -> Result<(i32, i32), ChannelError> {
    let (rx, tx) = crate::workloads::children::pipe()?;
    Ok((rx.into_raw_fd(), tx.into_raw_fd())) // owned by `Fds` from here on
}

fn pipes(_max: usize) -> Result<Pair, ChannelError> {
    let (down_rx, down_tx) = pipe()?;
    let (up_rx, up_tx) = pipe()?;
    Ok((
        Box::new(Fds {
            rx: up_rx,
            tx: down_tx,
            messages: false,
        }),
        Box::new(Fds {
            rx: down_rx,
            tx: up_tx,
            messages: false,
        }),
    ))
}

fn socket_pair(kind: i32) -> Result<Pair, ChannelError> {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills the two-element array.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            kind | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(os_error("socketpair"));
    }
    let messages = kind == libc::SOCK_SEQPACKET;
    for fd in fds {
        let size: libc::c_int = 1 << 20; // room for the largest payload in one message
                                         // SAFETY: setting an int option on our own socket.
        unsafe {
            for option in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
                let p = &size as *const libc::c_int as *const libc::c_void;
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    option,
                    p,
                    std::mem::size_of::<libc::c_int>() as u32,
                );
            }
        }
    }
    Ok((
        Box::new(Fds {
            rx: fds[0],
            tx: fds[0],
            messages,
        }),
        Box::new(Fds {
            rx: fds[1],
            tx: fds[1],
            messages,
        }),
    ))
}

// ---------------------------------------------------------------- shared memory

/// Anonymous memory shared with the child-to-be, left mapped for the process's life.
pub fn shared(len: usize) -> Result<*mut u8, ChannelError> {
    Ok(crate::workloads::map_anonymous(len, libc::MAP_SHARED)?)
}

/// One word of fresh shared memory, zero, for this process and those it forks next.
pub fn shared_word() -> Result<&'static AtomicU32, ChannelError> {
    // SAFETY: the first, aligned word of a page mapped for the process's whole life.
    Ok(unsafe { &*(shared(4096)? as *const AtomicU32) })
}

/// A one-way flag in shared memory: processes wait on it (a futex) until one opens it.
#[derive(Clone, Copy)]
pub struct Gate(&'static AtomicU32);

impl Gate {
    pub fn new() -> Result<Gate, ChannelError> {
        Ok(Gate(shared_word()?))
    }

    pub fn wait(&self) {
        while self.0.load(Ordering::Acquire) == 0 {
            futex(self.0, libc::FUTEX_WAIT, 0);
        }
    }

    pub fn open(&self) {
        self.0.store(1, Ordering::Release);
        futex(self.0, libc::FUTEX_WAKE, i32::MAX as u32);
    }
}

/// eventfd signalling: the payload goes through shared memory, the eventfd only says "ready".
struct EventShm {
    inbox: *mut u8,
    outbox: *mut u8,
    wait: i32,
    signal: i32,
}

// SAFETY: the pointers lead into shared memory mapped for the process's whole life.
unsafe impl Send for EventShm {}

impl Drop for EventShm {
    fn drop(&mut self) {
        // SAFETY: descriptors this end owns (each end has its own dup).
        unsafe {
            libc::close(self.wait);
            libc::close(self.signal);
        }
    }
}

impl Channel for EventShm {
    fn send(&mut self, data: &[u8]) -> Result<(), ChannelError> {
        // SAFETY: the outbox holds `max` bytes and the protocol never sends more.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.outbox, data.len()) };
        let one = 1u64;
        loop {
            // SAFETY: writing eight bytes to an eventfd.
            let n =
                unsafe { libc::write(self.signal, &one as *const u64 as *const libc::c_void, 8) };
            if n == 8 {
                return Ok(());
            }
            if !interrupted() {
                return Err(os_error("eventfd write"));
            }
        }
    }

    fn recv(&mut self, data: &mut [u8]) -> Result<(), ChannelError> {
        let mut count = 0u64;
        loop {
            // SAFETY: reading eight bytes from an eventfd; blocks until the other end signals.
            let n =
                unsafe { libc::read(self.wait, &mut count as *mut u64 as *mut libc::c_void, 8) };
            if n == 8 {
                break;
            }
            if !interrupted() {
                return Err(os_error("eventfd read"));
            }
        }
        // SAFETY: the inbox holds at least data.len() bytes, written before the signal.
        unsafe { std::ptr::copy_nonoverlapping(self.inbox, data.as_mut_ptr(), data.len()) };
        Ok(())
    }

    fn ready(&self) -> bool {
        readable(self.wait)
    }
}

fn eventfd() -> Result<i32, ChannelError> {
    // SAFETY: a new blocking eventfd.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(os_error("eventfd"));
    }
    Ok(fd)
}

fn dup(fd: i32) -> Result<i32, ChannelError> {
    // SAFETY: duplicating our own descriptor.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if new < 0 {
        return Err(os_error("dup"));
    }
    Ok(new)
}

fn eventfd_shm(max: usize) -> Result<Pair, ChannelError> {
    let region = shared(2 * max)?;
    let (to_server, to_client) = (eventfd()?, eventfd()?);
    // SAFETY: both halves lie inside the region.
    let (down, up) = (region, unsafe { region.add(max) });
    Ok((
        Box::new(EventShm {
            inbox: up,
            outbox: down,
            wait: to_client,
            signal: to_server,
        }),
        Box::new(EventShm {
            inbox: down,
            outbox: up,
            wait: dup(to_server)?,
            signal: dup(to_client)?,
        }),
    ))
}

/// One slot per direction: a sequence word (the futex) on its own cache line, then the data.
const SLOT_HEADER: usize = 64;

struct FutexSlots {
    inbox: *mut u8,
    outbox: *mut u8,
    seen: u32,
}

// SAFETY: the pointers lead into shared memory mapped for the process's whole life.
unsafe impl Send for FutexSlots {}

fn sequence(slot: *mut u8) -> &'static AtomicU32 {
    // SAFETY: the slot starts with an aligned u32 in shared memory that lives as long as the process.
    unsafe { &*(slot as *const AtomicU32) }
}

pub fn futex(word: &AtomicU32, op: i32, value: u32) -> i64 {
    // SAFETY: a futex call on a word in shared memory (not private: two processes use it).
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            value,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0,
        )
    }
}

impl Channel for FutexSlots {
    fn send(&mut self, data: &[u8]) -> Result<(), ChannelError> {
        // SAFETY: the slot's data area holds `max` bytes and the protocol never sends more.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.outbox.add(SLOT_HEADER), data.len())
        };
        let seq = sequence(self.outbox);
        seq.fetch_add(1, Ordering::Release);
        futex(seq, libc::FUTEX_WAKE, 1);
        Ok(())
    }

    fn recv(&mut self, data: &mut [u8]) -> Result<(), ChannelError> {
        let seq = sequence(self.inbox);
        loop {
            let now = seq.load(Ordering::Acquire);
            if now != self.seen {
                self.seen = now;
                break;
            }
            // sleeps only while the word still holds the value we saw: a wake cannot be lost
            if futex(seq, libc::FUTEX_WAIT, now) < 0 {
                let err = std::io::Error::last_os_error().raw_os_error();
                if !matches!(err, Some(libc::EAGAIN) | Some(libc::EINTR)) {
                    return Err(os_error("futex wait"));
                }
            }
        }
        // SAFETY: the data area holds at least data.len() bytes, written before the sequence moved.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.inbox.add(SLOT_HEADER),
                data.as_mut_ptr(),
                data.len(),
            )
        };
        Ok(())
    }

    fn ready(&self) -> bool {
        sequence(self.inbox).load(Ordering::Acquire) != self.seen
    }
}

fn futex_slots(max: usize) -> Result<Pair, ChannelError> {
    let slot = SLOT_HEADER + max.next_multiple_of(64);
    let region = shared(2 * slot)?;
    // SAFETY: both slots lie inside the region.
    let (down, up) = (region, unsafe { region.add(slot) });
    Ok((
        Box::new(FutexSlots {
            inbox: up,
            outbox: down,
            seen: 0,
        }),
        Box::new(FutexSlots {
            inbox: down,
            outbox: up,
            seen: 0,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::WorkloadError;

    #[test]
    fn a_closed_end_is_named_through_every_layer() {
        let (mut client, server) = pipes(8).unwrap();
        drop(server);
        let closed = client.recv(&mut [0u8; 8]).unwrap_err();
        assert!(matches!(closed, ChannelError::Closed));
        let said = WorkloadError::from(closed);
        assert!(matches!(said, WorkloadError::Channel(ChannelError::Closed)));
        assert_eq!(said.to_string(), "the other end closed");
    }

    #[test]
    fn binder_says_why_it_is_missing_in_one_line() {
        let text = super::super::binder::BinderError::NoDevice.to_string();
        assert_eq!(
            text,
            "binder skipped: this kernel offers no binder device (/dev/binderfs/binder, /dev/binder); \
             load binder_linux or mount binderfs where the kernel has binder (CONFIG_ANDROID_BINDER_IPC)"
        );
        assert!(!text.contains('\n'));
    }
}
