//! One app of the cycle: a process with an Android-like memory profile, and
//! what it does when the controller asks.
//!
//! Memory: anonymous memory in two parts, the process state (kept while the
//! process lives) and the activity/UI state (released on a TRIM_MEMORY_COMPLETE,
//! rebuilt by a warm start); a private mapping of its own "code" file; a shared
//! mapping of the one "framework" file every app uses. Anonymous pages are
//! never zero and never one repeated word (zram would store such pages without
//! compressing them): each starts with `random_bytes` of pseudo-random data and
//! repeats one word after that, so the share of random bytes sets how well
//! they compress. Every page's content follows from (seed, app, region, page),
//! so pages that come back from swap are checked, and a page that comes back
//! changed fails the run instead of producing a number.

use super::kernel::monotonic_ns;
use crate::workload::{failed, WorkloadError};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

pub const PAGE: usize = 4096;

/// Controller -> app.
pub const LAUNCH: u64 = 1;
pub const FOREGROUND: u64 = 2;
pub const TRIM: u64 = 3;
/// App -> controller.
pub const READY: u64 = 1;
pub const DONE: u64 = 2;
pub const TRIMMED: u64 = 3;
pub const CORRUPT: u64 = 4;

/// Android's onTrimMemory level at which an app releases its activity state.
pub const TRIM_MEMORY_COMPLETE: u64 = 80;

/// Shares of each region touched (percent of its pages), fixed so that every variant asks the
/// same of the kernel: a launch reads part of the code and framework and of the process state
/// and all of the activity state; each pass of a foreground dwell reads and writes the
/// activity state and part of the process state, and reads part of the code.
const LAUNCH_CODE: u64 = 50;
const LAUNCH_FRAMEWORK: u64 = 20;
const LAUNCH_PROCESS: u64 = 10;
const DWELL_PROCESS: u64 = 30;
const DWELL_CODE: u64 = 25;
const DWELL_FRAMEWORK: u64 = 10;

const PROCESS: u64 = 1;
const ACTIVITY: u64 = 2;
const CODE: u64 = 3;
const FRAMEWORK: u64 = 4;

/// What one app is: sizes in pages, its files, its seed.
#[derive(Clone)]
pub struct Profile {
    pub index: u32,
    pub seed: u64,
    pub process_pages: usize,
    pub activity_pages: usize,
    pub code: PathBuf,
    pub code_pages: usize,
    pub framework: PathBuf,
    pub framework_pages: usize,
    /// pseudo-random bytes at the start of every anonymous page (a multiple of 8, at least 8)
    pub random_bytes: usize,
}

/// A message either way: what it is and two numbers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Message {
    pub kind: u64,
    /// READY, DONE: the app's CLOCK_MONOTONIC when it was done; commands: their argument
    pub at_ns: u64,
    /// READY: major faults taken by the launch
    pub majflt: u64,
    /// TRIMMED: 1 when the activity state was released; CORRUPT: the page found changed
    pub detail: u64,
}

impl Message {
    pub fn send(&self, to: &mut UnixStream) -> std::io::Result<()> {
        let mut bytes = [0u8; 32];
        for (i, w) in [self.kind, self.at_ns, self.majflt, self.detail]
            .iter()
            .enumerate()
        {
            bytes[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        to.write_all(&bytes)
    }

    pub fn receive(from: &mut UnixStream) -> std::io::Result<Message> {
        let mut bytes = [0u8; 32];
        from.read_exact(&mut bytes)?;
        let w = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
        Ok(Message {
            kind: w(0),
            at_ns: w(1),
            majflt: w(2),
            detail: w(3),
        })
    }
}

pub fn mix(mut x: u64) -> u64 {
    // splitmix64's finaliser: a different, well-spread word for every input
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn key(seed: u64, app: u32, region: u64, page: usize) -> u64 {
    mix(seed ^ mix((app as u64) << 40 ^ region << 32 ^ page as u64))
}

fn picked(key: u64, percent: u64) -> bool {
    mix(key ^ 0x5bd1_e995) % 100 < percent
}

/// The word repeated after a page's random part: never zero.
fn filler(key: u64) -> u64 {
    mix(key ^ 0xa5a5_a5a5_a5a5_a5a5) | 1
}

fn getrusage_majflt() -> u64 {
    // SAFETY: getrusage writes into a zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_majflt as u64
}

/// An anonymous region of whole pages, kept out of transparent huge pages (a phone has none,
/// and a huge page is swapped out whole).
struct Region {
    base: *mut u64,
    pages: usize,
}

impl Region {
    fn map(pages: usize) -> Result<Region, WorkloadError> {
        let bytes = pages.max(1) * PAGE;
        let p = crate::workloads::map_anonymous(bytes, libc::MAP_PRIVATE)?;
        // SAFETY: advice on our own mapping; failure only means huge pages stay possible.
        unsafe { libc::madvise(p as *mut libc::c_void, bytes, libc::MADV_NOHUGEPAGE) };
        Ok(Region {
            base: p as *mut u64,
            pages,
        })
    }

    fn page(&self, page: usize) -> *mut u64 {
        // SAFETY: callers pass page < self.pages.
        unsafe { self.base.add(page * PAGE / 8) }
    }

    /// Writes every page's content.
    fn fill(&self, p: &Profile, region: u64) {
        let random_words = p.random_bytes / 8;
        for page in 0..self.pages {
            let k = key(p.seed, p.index, region, page);
            let words = self.page(page);
            let fill = filler(k);
            for w in 0..PAGE / 8 {
                let value = if w < random_words {
                    mix(k.wrapping_add(w as u64))
                } else {
                    fill
                };
                // SAFETY: w < PAGE / 8 words inside this page of our mapping.
                unsafe { words.add(w).write_volatile(value) };
            }
        }
    }

    /// Reads (and where `write`, rewrites with the same value, which dirties the page) the
    /// chosen pages, checking two words of each: the first random word and the last filler
    /// word. Err is the first page found changed.
    fn touch(&self, p: &Profile, region: u64, percent: u64, write: bool) -> Result<(), usize> {
        for page in 0..self.pages {
            let k = key(p.seed, p.index, region, page);
            if percent < 100 && !picked(k, percent) {
                continue;
            }
            let words = self.page(page);
            // SAFETY: both words lie inside this page of our mapping.
            let (first, last) = unsafe {
                (
                    words.read_volatile(),
                    words.add(PAGE / 8 - 1).read_volatile(),
                )
            };
            if first != mix(k) || last != filler(k) {
                return Err(page);
            }
            if write {
                // SAFETY: as above.
                unsafe { words.add(PAGE / 8 - 1).write_volatile(last) };
            }
        }
        Ok(())
    }

    /// Gives the pages back (and their swap slots): the next touch finds zero pages.
    fn release(&self) {
        // SAFETY: advice on our own mapping.
        unsafe {
            libc::madvise(
                self.base as *mut libc::c_void,
                self.pages.max(1) * PAGE,
                libc::MADV_DONTNEED,
            )
        };
    }
}

/// A read-only mapping of a file; touching reads one byte of each chosen page.
struct Mapped {
    base: *const u8,
    pages: usize,
}

impl Mapped {
    fn map(path: &PathBuf, pages: usize, shared: bool) -> Result<Mapped, WorkloadError> {
        let file =
            File::open(path).map_err(|e| WorkloadError::io(path.display().to_string(), e))?;
        let flags = if shared {
            libc::MAP_SHARED
        } else {
            libc::MAP_PRIVATE
        };
        // SAFETY: a read-only mapping of a file we opened, kept for the process's life.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                pages * PAGE,
                libc::PROT_READ,
                flags,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(WorkloadError::last_os(format!(
                "mapping {}",
                path.display()
            )));
        }
        Ok(Mapped {
            base: p as *const u8,
            pages,
        })
    }

    fn touch(&self, p: &Profile, region: u64, percent: u64) -> u64 {
        let mut sum = 0u64;
        for page in 0..self.pages {
            if picked(key(p.seed, p.index, region, page), percent) {
                // SAFETY: a byte inside the mapping.
                sum =
                    sum.wrapping_add(unsafe { self.base.add(page * PAGE).read_volatile() } as u64);
            }
        }
        sum
    }
}

struct Running<'a> {
    profile: &'a Profile,
    process: Region,
    activity: Region,
    activity_present: bool,
    code: Mapped,
    framework: Mapped,
}

impl Running<'_> {
    /// The launch's reads of code, framework and process state; Err: a page found changed.
    fn launch_reads(&self) -> Result<(), usize> {
        let p = self.profile;
        std::hint::black_box(
            self.code.touch(p, CODE, LAUNCH_CODE)
                ^ self.framework.touch(p, FRAMEWORK, LAUNCH_FRAMEWORK),
        );
        self.process.touch(p, PROCESS, LAUNCH_PROCESS, false)
    }

    /// Warm (activity state released: rebuilt) or hot (checked and dirtied) launch.
    fn launch(&mut self) -> Result<(), usize> {
        if self.activity_present {
            self.activity.touch(self.profile, ACTIVITY, 100, true)?;
        } else {
            self.activity.fill(self.profile, ACTIVITY);
            self.activity_present = true;
        }
        self.launch_reads()
    }

    /// Passes over the foreground working set until `dwell_ms` has gone by (one at least).
    fn dwell(&self, dwell_ms: u64) -> Result<u64, usize> {
        let p = self.profile;
        let until = monotonic_ns() + dwell_ms * 1_000_000;
        let mut passes = 0;
        loop {
            self.activity.touch(p, ACTIVITY, 100, true)?;
            self.process.touch(p, PROCESS, DWELL_PROCESS, true)?;
            std::hint::black_box(
                self.code.touch(p, CODE, DWELL_CODE)
                    ^ self.framework.touch(p, FRAMEWORK, DWELL_FRAMEWORK),
            );
            passes += 1;
            if monotonic_ns() >= until {
                return Ok(passes);
            }
        }
    }
}

/// The app's life after its fork: the cold launch, READY, then commands until the controller
/// closes the socket. Err: a failure the app reports on stderr before it exits non-zero.
pub fn live(profile: &Profile, mut sock: UnixStream) -> Result<(), WorkloadError> {
    let corrupt = |sock: &mut UnixStream, page: usize| {
        let _ = Message {
            kind: CORRUPT,
            detail: page as u64,
            ..Default::default()
        }
        .send(sock);
        failed!(
            "app {}: a page of its memory came back changed (page {page})",
            profile.index
        )
    };
    let mut app = Running {
        profile,
        code: Mapped::map(&profile.code, profile.code_pages, false)?,
        framework: Mapped::map(&profile.framework, profile.framework_pages, true)?,
        process: Region::map(profile.process_pages)?,
        activity: Region::map(profile.activity_pages)?,
        activity_present: true,
    };
    app.process.fill(profile, PROCESS);
    app.activity.fill(profile, ACTIVITY);
    if let Err(page) = app.launch_reads() {
        return Err(corrupt(&mut sock, page));
    }
    let ready = |sock: &mut UnixStream, majflt: u64| {
        Message {
            kind: READY,
            at_ns: monotonic_ns(),
            majflt,
            detail: 0,
        }
        .send(sock)
    };
    ready(&mut sock, getrusage_majflt()).map_err(|e| WorkloadError::io("READY", e))?;
    loop {
        let command = match Message::receive(&mut sock) {
            Ok(m) => m,
            Err(_) => return Ok(()), // the controller is done with this app
        };
        let answered = match command.kind {
            LAUNCH => {
                let before = getrusage_majflt();
                if let Err(page) = app.launch() {
                    return Err(corrupt(&mut sock, page));
                }
                ready(&mut sock, getrusage_majflt() - before)
            }
            FOREGROUND => match app.dwell(command.at_ns) {
                Ok(passes) => Message {
                    kind: DONE,
                    at_ns: monotonic_ns(),
                    majflt: 0,
                    detail: passes,
                }
                .send(&mut sock),
                Err(page) => return Err(corrupt(&mut sock, page)),
            },
            TRIM => {
                let release = command.at_ns >= TRIM_MEMORY_COMPLETE && app.activity_present;
                if release {
                    app.activity.release();
                    app.activity_present = false;
                }
                Message {
                    kind: TRIMMED,
                    detail: release as u64,
                    ..Default::default()
                }
                .send(&mut sock)
            }
            other => return Err(failed!("app {}: unknown command {other}", profile.index)),
        };
        answered.map_err(|e| WorkloadError::io(format!("app {}: answering", profile.index), e))?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(random_bytes: usize) -> Profile {
        Profile {
            index: 3,
            seed: 7,
            process_pages: 8,
            activity_pages: 4,
            code: PathBuf::new(),
            code_pages: 0,
            framework: PathBuf::new(),
            framework_pages: 0,
            random_bytes,
        }
    }

    #[test]
    fn pages_are_checked_and_compress_as_asked() {
        let p = profile(1368);
        let r = Region::map(8).unwrap();
        r.fill(&p, PROCESS);
        assert_eq!(r.touch(&p, PROCESS, 100, true), Ok(()));
        // SAFETY: page 5's first word, inside the mapping.
        unsafe { r.page(5).write_volatile(42) };
        assert_eq!(r.touch(&p, PROCESS, 100, false), Err(5));
        // a page is neither zero nor one repeated word, and its random part is as long as asked
        let words: Vec<u64> = (0..PAGE / 8)
            .map(|w| unsafe { r.page(1).add(w).read_volatile() })
            .collect();
        assert!(words.iter().any(|w| *w != words[PAGE / 8 - 1]));
        let distinct: std::collections::HashSet<_> = words.iter().collect();
        assert_eq!(distinct.len(), 1368 / 8 + 1);
        assert!(!words.contains(&0));
    }

    #[test]
    fn a_released_region_reads_as_changed() {
        let p = profile(8);
        let r = Region::map(4).unwrap();
        r.fill(&p, ACTIVITY);
        r.release();
        assert_eq!(r.touch(&p, ACTIVITY, 100, false), Err(0));
    }

    #[test]
    fn messages_cross_a_socket() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        Message {
            kind: READY,
            at_ns: 5,
            majflt: 6,
            detail: 7,
        }
        .send(&mut a)
        .unwrap();
        let m = Message::receive(&mut b).unwrap();
        assert_eq!((m.kind, m.at_ns, m.majflt, m.detail), (READY, 5, 6, 7));
    }
}
