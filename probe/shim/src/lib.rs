//! `libbenchlab_shim.so`: a preloadable allocator hook in the shape of a lightweight
//! use-after-free detector, so that benchlab can measure what such a hook costs.
//!
//! Every call of the malloc family passes through here and goes on to the next
//! allocator in the lookup order (glibc, or a preloaded jemalloc, tcmalloc or
//! mimalloc): the shim adds no header, so every pointer is the real allocator's
//! own and code that bypasses the shim (glibc's internal calls) stays correct.
//! One free in N per thread is sampled: instead of being freed, the block is
//! filled with a pattern and parked in a bounded quarantine; when it is evicted
//! (oldest first) the pattern is checked, and a changed byte is reported as a
//! use-after-free write: a line for people on stderr and, where benchlab names a
//! report file, a JSON line there. At exit the blocks still parked are checked
//! too.
//!
//! Written by hand because no library does this: sanitizers and GWP-ASan are
//! compiled in or tied to one allocator, and the point is to measure a hook that
//! any binary gets through `LD_PRELOAD`.
//!
//! Environment (read once per process, at load):
//! - `BENCHLAB_SHIM_SAMPLING=N`: sample one free in N per thread; 0 (the default)
//!   leaves the shim installed but doing nothing else.
//! - `BENCHLAB_SHIM_SCOPE=GLOB`: be active only in processes whose program name
//!   (argv[0]'s last component) matches the shell pattern; others are no-ops.
//! - `BENCHLAB_SHIM_QUARANTINE=SLOTS` (default 1024, at most 65536) and
//!   `BENCHLAB_SHIM_QUARANTINE_KIB=KIB` (default 16384): the quarantine's bounds.
//! - `BENCHLAB_SHIM_STATS=1`: at exit, say how many frees were sampled.
//! - `BENCHLAB_SHIM_REPORT=PATH`: append what the shim found, one JSON object a
//!   line (protocol `REPORT_PROTOCOL`), for benchlab to read: `{"protocol": 1,
//!   "event": "use_after_free_write", "pid", "block", "size", "offset"}` per
//!   caught write and, with STATS, `{"protocol": 1, "event": "stats", "pid",
//!   "sampled", "sampling", "caught"}` at exit. Lines of several processes stay
//!   whole (one O_APPEND write each).
//!
//! Re-entrancy: the only allocating calls the shim makes (`dlsym`, `fnmatch`,
//! `pthread_atfork`) happen while it resolves the next allocator, and are served
//! from a static bump arena. Fork: the quarantine lock is taken around fork and
//! released in both parent and child. Nothing here panics or allocates through
//! Rust; the sampling decision is one thread-local countdown.

// The exported functions keep the C malloc family's own contract; there is nothing to add to it.
#![allow(clippy::missing_safety_doc)]

use std::cell::{Cell, UnsafeCell};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

type Malloc = unsafe extern "C" fn(usize) -> *mut c_void;
type Free = unsafe extern "C" fn(*mut c_void);
type Calloc = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type Realloc = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
type Aligned = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type PosixMemalign = unsafe extern "C" fn(*mut *mut c_void, usize, usize) -> c_int;
type UsableSize = unsafe extern "C" fn(*mut c_void) -> usize;

/// The next allocator's functions and the settings, fixed once at load.
struct Setup {
    malloc: Malloc,
    free: Free,
    calloc: Calloc,
    realloc: Realloc,
    memalign: Aligned,
    aligned_alloc: Aligned,
    posix_memalign: PosixMemalign,
    usable_size: UsableSize,
    page: usize,
    sampling: u64,
    slots: usize,
    max_bytes: usize,
    stats: bool,
}

/// A value written once before `STATE` becomes `READY`, read-only afterwards.
struct Once<T>(UnsafeCell<MaybeUninit<T>>);
unsafe impl<T> Sync for Once<T> {}

const UNINIT: u8 = 0;
const RESOLVING: u8 = 1;
const READY: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static SETUP: Once<Setup> = Once(UnsafeCell::new(MaybeUninit::uninit()));

thread_local! {
    static RESOLVER: Cell<bool> = const { Cell::new(false) };
    static COUNTDOWN: Cell<u64> = const { Cell::new(0) };
}

const PATTERN: u8 = 0xBD;
const MAX_SLOTS: usize = 1 << 16;

// ---------------------------------------------------------------- bootstrap arena

/// Serves the few allocations `dlsym` and friends make before the next allocator is
/// known. Never reused: the arena is zeroed memory, each block preceded by its size.
#[repr(C, align(64))]
struct Arena(UnsafeCell<[u8; 1 << 16]>);
unsafe impl Sync for Arena {}
static ARENA: Arena = Arena(UnsafeCell::new([0; 1 << 16]));
static ARENA_USED: AtomicUsize = AtomicUsize::new(0);
const HEADER: usize = 16;

unsafe fn arena_alloc(size: usize, align: usize) -> *mut c_void {
    let base = ARENA.0.get() as usize;
    let align = align.max(HEADER);
    let mut used = ARENA_USED.load(Ordering::Relaxed);
    loop {
        let start = (base + used + HEADER + align - 1) & !(align - 1);
        let end = start + size;
        if end > base + (1 << 16) {
            die(b"benchlab-shim: bootstrap arena exhausted before the allocator was found\n");
        }
        match ARENA_USED.compare_exchange(used, end - base, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => {
                *((start - HEADER) as *mut usize) = size;
                return start as *mut c_void;
            }
            Err(now) => used = now,
        }
    }
}

fn in_arena(p: *mut c_void) -> bool {
    let base = ARENA.0.get() as usize;
    (base..base + (1 << 16)).contains(&(p as usize))
}

unsafe fn arena_size(p: *mut c_void) -> usize {
    *((p as usize - HEADER) as *const usize)
}

// ---------------------------------------------------------------- setup

fn die(msg: &[u8]) -> ! {
    unsafe {
        libc::write(2, msg.as_ptr() as *const c_void, msg.len());
        libc::abort()
    }
}

unsafe fn next(name: &CStr) -> *mut c_void {
    let f = libc::dlsym(libc::RTLD_NEXT, name.as_ptr());
    if f.is_null() {
        let mut line = Line::new();
        line.text(b"benchlab-shim: the allocator after the shim has no ").text(name.to_bytes()).text(b"\n");
        die(line.bytes());
    }
    f
}

unsafe fn env_number(name: &CStr, default: u64, max: u64) -> u64 {
    let value = libc::getenv(name.as_ptr());
    if value.is_null() || *value == 0 {
        return default;
    }
    let text = CStr::from_ptr(value).to_bytes();
    let mut n: u64 = 0;
    for &c in text {
        if !c.is_ascii_digit() || n > max {
            let mut line = Line::new();
            line.text(b"benchlab-shim: ").text(name.to_bytes()).text(b"=").text(text);
            line.text(b" is not a whole number up to ").number(max).text(b"\n");
            die(line.bytes());
        }
        n = n * 10 + u64::from(c - b'0');
    }
    if n > max {
        let mut line = Line::new();
        line.text(b"benchlab-shim: ").text(name.to_bytes()).text(b" is above ").number(max).text(b"\n");
        die(line.bytes());
    }
    n
}

extern "C" {
    static program_invocation_short_name: *const c_char;
}

unsafe fn in_scope() -> bool {
    let pattern = libc::getenv(c"BENCHLAB_SHIM_SCOPE".as_ptr());
    pattern.is_null() || *pattern == 0 || libc::fnmatch(pattern, program_invocation_short_name, 0) == 0
}

unsafe fn resolve() -> Setup {
    let scope = in_scope();
    let sampling = env_number(c"BENCHLAB_SHIM_SAMPLING", 0, u64::MAX / 2);
    let setup = Setup {
        malloc: std::mem::transmute::<*mut c_void, Malloc>(next(c"malloc")),
        free: std::mem::transmute::<*mut c_void, Free>(next(c"free")),
        calloc: std::mem::transmute::<*mut c_void, Calloc>(next(c"calloc")),
        realloc: std::mem::transmute::<*mut c_void, Realloc>(next(c"realloc")),
        memalign: std::mem::transmute::<*mut c_void, Aligned>(next(c"memalign")),
        aligned_alloc: std::mem::transmute::<*mut c_void, Aligned>(next(c"aligned_alloc")),
        posix_memalign: std::mem::transmute::<*mut c_void, PosixMemalign>(next(c"posix_memalign")),
        usable_size: std::mem::transmute::<*mut c_void, UsableSize>(next(c"malloc_usable_size")),
        page: libc::sysconf(libc::_SC_PAGESIZE) as usize,
        sampling: if scope { sampling } else { 0 },
        slots: env_number(c"BENCHLAB_SHIM_QUARANTINE", 1024, MAX_SLOTS as u64).max(1) as usize,
        max_bytes: env_number(c"BENCHLAB_SHIM_QUARANTINE_KIB", 16384, 1 << 30) as usize * 1024,
        stats: env_number(c"BENCHLAB_SHIM_STATS", 0, 1) == 1,
    };
    if setup.sampling > 0 {
        libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(after_fork));
    }
    setup
}

/// Makes the setup ready; false when this very thread is resolving it (a call from
/// inside `dlsym`), which the arena then serves.
#[cold]
unsafe fn make_ready() -> bool {
    loop {
        match STATE.compare_exchange(UNINIT, RESOLVING, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                RESOLVER.with(|r| r.set(true));
                let setup = resolve();
                (*SETUP.0.get()).write(setup);
                RESOLVER.with(|r| r.set(false));
                STATE.store(READY, Ordering::Release);
                return true;
            }
            Err(READY) => return true,
            Err(_) if RESOLVER.with(|r| r.get()) => return false,
            Err(_) => std::hint::spin_loop(),
        }
    }
}

#[inline(always)]
unsafe fn setup() -> Option<&'static Setup> {
    if STATE.load(Ordering::Acquire) != READY && !make_ready() {
        return None;
    }
    Some((*SETUP.0.get()).assume_init_ref())
}

// Resolve at load time, before the program's threads exist; calls made earlier
// (by other libraries' constructors) resolve on first use.
#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = {
    extern "C" fn init() {
        unsafe {
            setup();
        }
    }
    init
};

// ---------------------------------------------------------------- quarantine

struct Quarantine {
    blocks: [(usize, usize); MAX_SLOTS],
    head: usize,
    len: usize,
    bytes: usize,
}

struct Locked(UnsafeCell<Quarantine>, UnsafeCell<libc::pthread_mutex_t>);
unsafe impl Sync for Locked {}
static QUARANTINE: Locked = Locked(
    UnsafeCell::new(Quarantine { blocks: [(0, 0); MAX_SLOTS], head: 0, len: 0, bytes: 0 }),
    UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER),
);
static SAMPLED: AtomicU64 = AtomicU64::new(0);
static CAUGHT: AtomicU64 = AtomicU64::new(0);

unsafe fn lock() {
    libc::pthread_mutex_lock(QUARANTINE.1.get());
}

unsafe fn unlock() {
    libc::pthread_mutex_unlock(QUARANTINE.1.get());
}

extern "C" fn before_fork() {
    unsafe { lock() }
}

extern "C" fn after_fork() {
    unsafe { unlock() }
}

/// Parks a freed block, then frees and checks whatever the bounds push out.
#[inline(never)]
unsafe fn quarantine(s: &Setup, p: *mut c_void) {
    let size = (s.usable_size)(p);
    std::ptr::write_bytes(p as *mut u8, PATTERN, size);
    SAMPLED.fetch_add(1, Ordering::Relaxed);
    lock();
    let q = &mut *QUARANTINE.0.get();
    let tail = (q.head + q.len) % MAX_SLOTS;
    q.blocks[tail] = (p as usize, size);
    q.len += 1;
    q.bytes += size;
    loop {
        if q.len <= s.slots && q.bytes <= s.max_bytes {
            unlock();
            return;
        }
        let (old, old_size) = q.blocks[q.head];
        q.head = (q.head + 1) % MAX_SLOTS;
        q.len -= 1;
        q.bytes -= old_size;
        unlock();
        check(old as *mut u8, old_size);
        (s.free)(old as *mut c_void);
        lock();
    }
}

/// The version of the JSON lines in `BENCHLAB_SHIM_REPORT`; benchlab refuses any other.
const REPORT_PROTOCOL: u64 = 1;

/// Appends one JSON line to the report file benchlab named, if it named one.
unsafe fn report(line: &Line) {
    let path = libc::getenv(c"BENCHLAB_SHIM_REPORT".as_ptr());
    if path.is_null() || *path == 0 {
        return;
    }
    let fd = libc::open(path, libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC, 0o600);
    if fd >= 0 {
        libc::write(fd, line.bytes().as_ptr() as *const c_void, line.bytes().len());
        libc::close(fd);
    }
}

/// Reports the first byte of a parked block that is no longer the pattern.
unsafe fn check(p: *mut u8, size: usize) {
    let bytes = std::slice::from_raw_parts(p, size);
    let Some(offset) = bytes.iter().position(|&b| b != PATTERN) else { return };
    CAUGHT.fetch_add(1, Ordering::Relaxed);
    let pid = libc::getpid() as u64;
    let mut line = Line::new();
    line.text(b"benchlab-shim: use-after-free write caught in pid ").number(pid);
    line.text(b": block 0x").hex(p as u64).text(b" of ").number(size as u64);
    line.text(b" bytes changed at offset ").number(offset as u64).text(b" after it was freed\n");
    libc::write(2, line.bytes().as_ptr() as *const c_void, line.bytes().len());
    let mut json = Line::new();
    json.text(b"{\"protocol\": ").number(REPORT_PROTOCOL).text(b", \"event\": \"use_after_free_write\", \"pid\": ").number(pid);
    json.text(b", \"block\": \"0x").hex(p as u64).text(b"\", \"size\": ").number(size as u64);
    json.text(b", \"offset\": ").number(offset as u64).text(b"}\n");
    report(&json);
}

#[used]
#[link_section = ".fini_array"]
static FINI: extern "C" fn() = {
    extern "C" fn fini() {
        unsafe {
            let Some(s) = setup() else { return };
            if s.sampling == 0 {
                return;
            }
            lock();
            let q = &*QUARANTINE.0.get();
            for i in 0..q.len {
                let (p, size) = q.blocks[(q.head + i) % MAX_SLOTS];
                check(p as *mut u8, size);
            }
            unlock();
            if s.stats {
                let (pid, sampled, caught) = (libc::getpid() as u64, SAMPLED.load(Ordering::Relaxed), CAUGHT.load(Ordering::Relaxed));
                let mut line = Line::new();
                line.text(b"benchlab-shim: pid ").number(pid).text(b" sampled ");
                line.number(sampled).text(b" frees (1 in ").number(s.sampling);
                line.text(b"), caught ").number(caught).text(b" use-after-free writes\n");
                libc::write(2, line.bytes().as_ptr() as *const c_void, line.bytes().len());
                let mut json = Line::new();
                json.text(b"{\"protocol\": ").number(REPORT_PROTOCOL).text(b", \"event\": \"stats\", \"pid\": ").number(pid);
                json.text(b", \"sampled\": ").number(sampled).text(b", \"sampling\": ").number(s.sampling);
                json.text(b", \"caught\": ").number(caught).text(b"}\n");
                report(&json);
            }
        }
    }
    fini
};

// ---------------------------------------------------------------- messages without allocating

struct Line {
    buf: [u8; 512],
    len: usize,
}

impl Line {
    fn new() -> Line {
        Line { buf: [0; 512], len: 0 }
    }

    fn text(&mut self, t: &[u8]) -> &mut Line {
        let n = t.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&t[..n]);
        self.len += n;
        self
    }

    fn digits(&mut self, mut v: u64, base: u64) -> &mut Line {
        let mut tmp = [0u8; 20];
        let mut i = tmp.len();
        loop {
            i -= 1;
            tmp[i] = b"0123456789abcdef"[(v % base) as usize];
            v /= base;
            if v == 0 {
                break;
            }
        }
        self.text(&tmp[i..])
    }

    fn number(&mut self, v: u64) -> &mut Line {
        self.digits(v, 10)
    }

    fn hex(&mut self, v: u64) -> &mut Line {
        self.digits(v, 16)
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

// ---------------------------------------------------------------- the malloc family

#[no_mangle]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    match setup() {
        Some(s) => (s.malloc)(size),
        None => arena_alloc(size, HEADER),
    }
}

#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if p.is_null() || in_arena(p) {
        return;
    }
    let Some(s) = setup() else { return };
    if s.sampling != 0 {
        return sample(s, p);
    }
    (s.free)(p)
}

/// The sampling decision: one thread-local countdown. Kept out of `free` so that the
/// no-op path stays a few instructions and a tail jump.
#[cold]
#[inline(never)]
unsafe fn sample(s: &Setup, p: *mut c_void) {
    let due = COUNTDOWN.with(|c| {
        let left = if c.get() == 0 { s.sampling } else { c.get() }; // 0: the thread's first free
        c.set(if left == 1 { s.sampling } else { left - 1 });
        left == 1
    });
    if due {
        quarantine(s, p)
    } else {
        (s.free)(p)
    }
}

#[no_mangle]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    match setup() {
        Some(s) => (s.calloc)(n, size),
        None => match n.checked_mul(size) {
            Some(total) => arena_alloc(total, HEADER), // the arena is zeroed and never reused
            None => std::ptr::null_mut(),
        },
    }
}

#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    if !p.is_null() && in_arena(p) {
        let fresh = malloc(size);
        if !fresh.is_null() {
            std::ptr::copy_nonoverlapping(p as *const u8, fresh as *mut u8, arena_size(p).min(size));
        }
        return fresh;
    }
    match setup() {
        Some(s) => (s.realloc)(p, size),
        None => arena_alloc(size, HEADER), // p is null here: nothing outside the arena exists yet
    }
}

#[no_mangle]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    match setup() {
        Some(s) => (s.memalign)(align, size),
        None => arena_alloc(size, align.next_power_of_two()),
    }
}

#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    match setup() {
        Some(s) => (s.aligned_alloc)(align, size),
        None => arena_alloc(size, align.next_power_of_two()),
    }
}

#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    match setup() {
        Some(s) => (s.posix_memalign)(out, align, size),
        None => {
            *out = arena_alloc(size, align.next_power_of_two());
            0
        }
    }
}

/// Obsolete; page-aligned memalign, as glibc itself implements it, so the block
/// always comes from the same allocator as its free.
#[no_mangle]
pub unsafe extern "C" fn valloc(size: usize) -> *mut c_void {
    match setup() {
        Some(s) => (s.memalign)(s.page, size),
        None => arena_alloc(size, 4096),
    }
}

/// Obsolete; like valloc with the size rounded up to whole pages.
#[no_mangle]
pub unsafe extern "C" fn pvalloc(size: usize) -> *mut c_void {
    match setup() {
        Some(s) => match size.checked_add(s.page - 1) {
            Some(up) => (s.memalign)(s.page, (up & !(s.page - 1)).max(s.page)),
            None => std::ptr::null_mut(),
        },
        None => arena_alloc(size, 4096),
    }
}

#[no_mangle]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    if p.is_null() {
        return 0;
    }
    if in_arena(p) {
        return arena_size(p);
    }
    match setup() {
        Some(s) => (s.usable_size)(p),
        None => 0,
    }
}
