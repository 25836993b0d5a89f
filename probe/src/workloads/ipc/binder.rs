//! Binder itself, where the kernel offers a binder device: the server becomes
//! the device's context manager (handle 0), the client makes synchronous
//! transactions to it (BC_TRANSACTION, answered by BC_REPLY), and every
//! received buffer is freed with the next command, as libbinder does.
//!
//! Written by hand against the kernel's UAPI (include/uapi/linux/android/
//! binder.h): no Rust crate speaks raw binder outside Android's own tree.
//! A binder file belongs to the process that opened it, so each end opens the
//! device on first use, in its own process; the client waits (on a futex in
//! shared memory) until the server holds the context manager. One pair per
//! device: a device has one context manager, and the kernel refuses calls to
//! it from the process that owns it, so the ends must be two processes.

use super::channel::{Channel, ChannelError, Gate, Pair};

/// Where a binder device may be, binderfs first.
pub const DEVICES: &[&str] = &["/dev/binderfs/binder", "/dev/binder"];

const BINDER_WRITE_READ: libc::c_ulong = 0xc030_6201;
const BINDER_SET_CONTEXT_MGR: libc::c_ulong = 0x4004_6207;
const BINDER_VERSION: libc::c_ulong = 0xc004_6209;
const PROTOCOL_VERSION: i32 = 8; // 64-bit binder

const BC_TRANSACTION: u32 = 0x4040_6300;
const BC_REPLY: u32 = 0x4040_6301;
const BC_FREE_BUFFER: u32 = 0x4008_6303;
const BC_ENTER_LOOPER: u32 = 0x630c;

const BR_ERROR: u32 = 0x8004_7200;
const BR_TRANSACTION: u32 = 0x8040_7202;
const BR_REPLY: u32 = 0x8040_7203;
const BR_DEAD_REPLY: u32 = 0x7205;
const BR_FAILED_REPLY: u32 = 0x7211;

#[repr(C)]
struct WriteRead {
    write_size: u64,
    write_consumed: u64,
    write_buffer: u64,
    read_size: u64,
    read_consumed: u64,
    read_buffer: u64,
}

/// struct binder_transaction_data, 64-bit layout (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Transaction {
    target: u64,
    cookie: u64,
    code: u32,
    flags: u32,
    sender_pid: i32,
    sender_euid: u32,
    data_size: u64,
    offsets_size: u64,
    buffer: u64,
    offsets: u64,
}

/// Why binder could not be used or failed a transaction.
#[derive(Debug, thiserror::Error)]
pub enum BinderError {
    /// This kernel has no binder: the run is refused, not failed.
    #[error(
        "binder skipped: this kernel offers no binder device (/dev/binderfs/binder, /dev/binder); \
         load binder_linux or mount binderfs where the kernel has binder (CONFIG_ANDROID_BINDER_IPC)"
    )]
    NoDevice,
    /// A call on the device that failed, named.
    #[error("binder {what}: {source}")]
    Os {
        what: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Path(#[from] std::ffi::NulError),
    #[error("binder {path} speaks protocol {version}, not {PROTOCOL_VERSION}")]
    Protocol { path: String, version: i32 },
    #[error("binder: the server is gone (BR_DEAD_REPLY)")]
    DeadReply,
    #[error("binder: the transaction failed (BR_FAILED_REPLY)")]
    FailedReply,
    #[error("binder: BR_ERROR {0}")]
    Error(i32),
    #[error("binder: {got} bytes arrived where {sent} were sent")]
    Payload { got: u64, sent: usize },
    #[error("binder: {0} already has a context manager (another pair, or a service manager): one pair per device")]
    Busy(&'static str),
}

/// The first binder device present; Err says why there is none.
pub fn device() -> Result<&'static str, BinderError> {
    DEVICES
        .iter()
        .copied()
        .find(|d| std::path::Path::new(d).exists())
        .ok_or(BinderError::NoDevice)
}

fn os_error(what: impl Into<String>) -> BinderError {
    BinderError::Os {
        what: what.into(),
        source: std::io::Error::last_os_error(),
    }
}

/// An open binder device with its receive mapping.
struct Device {
    fd: i32,
    map: *mut libc::c_void,
    map_len: usize,
    to_free: Option<u64>, // the last received buffer, freed with the next command
    read: Vec<u64>,
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: a mapping and a descriptor this end owns.
        unsafe {
            libc::munmap(self.map, self.map_len);
            libc::close(self.fd);
        }
    }
}

impl Device {
    fn open(path: &str, max: usize) -> Result<Device, BinderError> {
        let c_path = std::ffi::CString::new(path)?;
        // SAFETY: opening a device by a NUL-terminated path.
        let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(os_error(format!("open {path}")));
        }
        let mut version: i32 = 0;
        // SAFETY: BINDER_VERSION writes one s32.
        if unsafe { libc::ioctl(fd, BINDER_VERSION, &mut version) } != 0
            || version != PROTOCOL_VERSION
        {
            // SAFETY: our own descriptor.
            unsafe { libc::close(fd) };
            return Err(BinderError::Protocol {
                path: path.into(),
                version,
            });
        }
        let map_len = (2 * max + (64 << 10)).next_multiple_of(4096).min(4 << 20);
        // SAFETY: the receive area binder requires, read-only and private.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                fd,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            // SAFETY: our own descriptor.
            unsafe { libc::close(fd) };
            return Err(os_error("mmap"));
        }
        Ok(Device {
            fd,
            map,
            map_len,
            to_free: None,
            read: vec![0; 32],
        })
    }

    /// Writes `commands` (after freeing the last buffer); when `wait_for` is
    /// given, reads until that command arrives and returns its transaction.
    fn talk(&mut self, commands: &[u8], wait_for: Option<u32>) -> Result<Transaction, BinderError> {
        let mut out = Vec::with_capacity(12 + commands.len());
        if let Some(buffer) = self.to_free.take() {
            out.extend(BC_FREE_BUFFER.to_ne_bytes());
            out.extend(buffer.to_ne_bytes());
        }
        out.extend_from_slice(commands);
        let mut written = 0;
        loop {
            let mut wr = WriteRead {
                write_size: (out.len() - written) as u64,
                write_consumed: 0,
                write_buffer: out[written..].as_ptr() as u64,
                read_size: if wait_for.is_some() {
                    (self.read.len() * 8) as u64
                } else {
                    0
                },
                read_consumed: 0,
                read_buffer: self.read.as_mut_ptr() as u64,
            };
            // SAFETY: the buffers named in `wr` live across the call.
            if unsafe { libc::ioctl(self.fd, BINDER_WRITE_READ, &mut wr) } != 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    written += wr.write_consumed as usize;
                    continue;
                }
                return Err(os_error("write/read"));
            }
            written += wr.write_consumed as usize;
            let Some(wanted) = wait_for else {
                return Ok(Transaction::default());
            };
            if let Some(found) = self.scan(wr.read_consumed as usize, wanted)? {
                return Ok(found);
            }
        }
    }

    /// Walks the returned commands; Some when the awaited one is among them.
    fn scan(&mut self, len: usize, wanted: u32) -> Result<Option<Transaction>, BinderError> {
        // SAFETY: the kernel filled `len` bytes of our read buffer.
        let bytes = unsafe { std::slice::from_raw_parts(self.read.as_ptr() as *const u8, len) };
        let mut at = 0;
        let mut found = None;
        while at + 4 <= len {
            let cmd = u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap());
            let size = ((cmd >> 16) & 0x3fff) as usize;
            let body = &bytes[at + 4..(at + 4 + size).min(len)];
            match cmd {
                BR_DEAD_REPLY => return Err(BinderError::DeadReply),
                BR_FAILED_REPLY => return Err(BinderError::FailedReply),
                BR_ERROR => {
                    return Err(BinderError::Error(i32::from_ne_bytes(
                        body[..4].try_into().unwrap(),
                    )))
                }
                _ if cmd == wanted && body.len() == std::mem::size_of::<Transaction>() => {
                    // SAFETY: a binder_transaction_data the kernel wrote, read unaligned.
                    let t =
                        unsafe { std::ptr::read_unaligned(body.as_ptr() as *const Transaction) };
                    self.to_free = Some(t.buffer);
                    found = Some(t);
                }
                _ => {} // BR_NOOP, BR_TRANSACTION_COMPLETE, BR_SPAWN_LOOPER, BR_OK: nothing to do
            }
            at += 4 + size;
        }
        Ok(found)
    }

    fn payload(&self, t: &Transaction, data: &mut [u8]) -> Result<(), BinderError> {
        if t.data_size as usize != data.len() {
            return Err(BinderError::Payload {
                got: t.data_size,
                sent: data.len(),
            });
        }
        // SAFETY: the kernel placed data_size bytes at `buffer`, inside our mapping.
        unsafe {
            std::ptr::copy_nonoverlapping(t.buffer as *const u8, data.as_mut_ptr(), data.len())
        };
        Ok(())
    }
}

fn command(code: u32, t: &Transaction) -> Vec<u8> {
    let mut out = code.to_ne_bytes().to_vec();
    // SAFETY: a plain repr(C) struct viewed as its bytes.
    out.extend_from_slice(unsafe {
        std::slice::from_raw_parts(
            t as *const Transaction as *const u8,
            std::mem::size_of::<Transaction>(),
        )
    });
    out
}

fn outgoing(data: &[u8]) -> Transaction {
    Transaction {
        code: 1,
        data_size: data.len() as u64,
        buffer: data.as_ptr() as u64,
        ..Default::default()
    }
}

/// One end of the pair, opened on first use in the process that uses it.
struct End {
    path: &'static str,
    max: usize,
    server: bool,
    ready: Gate, // opened once the server holds the context manager
    device: Option<Device>,
}

// SAFETY: the raw mapping pointer is only used by the process and thread that own the end.
unsafe impl Send for End {}

impl End {
    fn device(&mut self) -> Result<&mut Device, BinderError> {
        if self.device.is_none() {
            if !self.server {
                self.ready.wait();
            }
            let mut device = Device::open(self.path, self.max)?;
            if self.server {
                become_manager(&device, self.path)?;
                device.talk(&BC_ENTER_LOOPER.to_ne_bytes(), None)?;
                self.ready.open();
            }
            self.device = Some(device);
        }
        Ok(self.device.as_mut().unwrap())
    }
}

/// Takes the context manager, waiting a little for a previous run's release.
fn become_manager(device: &Device, path: &'static str) -> Result<(), BinderError> {
    for _ in 0..100 {
        // SAFETY: BINDER_SET_CONTEXT_MGR takes an s32 by value (0).
        if unsafe { libc::ioctl(device.fd, BINDER_SET_CONTEXT_MGR, 0) } == 0 {
            return Ok(());
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EBUSY) {
            return Err(os_error("set context manager"));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Err(BinderError::Busy(path))
}

impl Channel for End {
    fn send(&mut self, data: &[u8]) -> Result<(), ChannelError> {
        let code = if self.server {
            BC_REPLY
        } else {
            BC_TRANSACTION
        };
        self.device()?.talk(&command(code, &outgoing(data)), None)?;
        Ok(())
    }

    fn recv(&mut self, data: &mut [u8]) -> Result<(), ChannelError> {
        let wanted = if self.server {
            BR_TRANSACTION
        } else {
            BR_REPLY
        };
        let device = self.device()?;
        let t = device.talk(&[], Some(wanted))?;
        Ok(device.payload(&t, data)?)
    }

    fn ready(&self) -> bool {
        self.device.as_ref().is_some_and(|d| {
            let mut poll = libc::pollfd {
                fd: d.fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd we own, zero timeout.
            unsafe { libc::poll(&mut poll, 1, 0) > 0 }
        })
    }
}

pub fn binder_pair(max: usize) -> Result<Pair, ChannelError> {
    let path = device()?;
    let ready = Gate::new()?;
    let end = |server| {
        Box::new(End {
            path,
            max,
            server,
            ready,
            device: None,
        })
    };
    Ok((end(false), end(true)))
}

#[cfg(test)]
mod tests {
    use crate::workload::Options;
    use crate::workload::Workload;
    use crate::workloads::ipc::throughput::ALL;

    #[test]
    fn binder_carries_every_payload_between_two_processes() {
        if super::device().is_err() {
            eprintln!("skipped: no binder device");
            return;
        }
        let binder = ALL
            .iter()
            .find(|w| w.name == "ipc.binder.throughput")
            .unwrap();
        let values = [
            ("min-payload", "4"),
            ("max-payload", "64k"),
            ("iterations", "20"),
            ("warmup", "2"),
            ("seed", "1"),
            ("placement", "unpinned"),
            ("spin-us", "0"),
        ];
        let opts = Options::parse(
            binder.about().options,
            values
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
        .unwrap();
        let entries = binder.run(&opts, &mut Default::default()).unwrap();
        assert_eq!(entries.len(), 15);
        assert!(entries
            .iter()
            .all(|e| e.iterations == 20 && e.real_time_ns > 0.0));
    }
}
