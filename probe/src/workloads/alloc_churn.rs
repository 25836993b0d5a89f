//! alloc.churn: the load an allocator change moves. Threads replace blocks in
//! a table of live allocations; most replacements hit a small hot set
//! (short lifetimes), the rest a large cold set (long lifetimes); sizes mix
//! small objects with buffers beyond glibc's mmap threshold; some blocks are
//! grown or shrunk with realloc. Every block is filled on allocation and
//! read back before it is freed, so a broken allocator fails the run.

use crate::protocol::Said;
use crate::report::Entry;
use crate::timing::Stopwatch;
use crate::workload::{
    failed, About, Digest, Kind, MetricSpec, OptionSpec, Options, Workload, WorkloadError, SEED,
};
use rand::{RngCore, SeedableRng};
use rand_pcg::Pcg64;

pub struct AllocChurn;

const PAGE: usize = 4096;

static OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "threads",
        default: "2",
        help: "threads churning at once",
        kind: Kind::Int { min: 1, max: 4096 },
    },
    OptionSpec {
        name: "ops",
        default: "1000000",
        help: "allocations per thread",
        kind: Kind::Int {
            min: 1,
            max: u64::MAX / 4096,
        },
    },
    OptionSpec {
        name: "slots",
        default: "8192",
        help: "live blocks per thread (10% of them hot)",
        kind: Kind::Int {
            min: 1,
            max: 1 << 24,
        },
    },
    OptionSpec {
        name: "max-size",
        default: "256k",
        help: "largest block in bytes",
        kind: Kind::Size {
            min: 16,
            max: 1 << 30,
        },
    },
    OptionSpec {
        name: "seed",
        default: "1",
        help: "seed of the size and lifetime sequence",
        kind: SEED,
    },
];

static METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "real_time",
        unit: "ns",
        direction: "lower",
        help: "wall time per allocation, per thread",
    },
    MetricSpec {
        name: "cpu_time",
        unit: "ns",
        direction: "lower",
        help: "CPU time per allocation, all threads",
    },
    MetricSpec {
        name: "items_per_second",
        unit: "1/s",
        direction: "higher",
        help: "allocations per second, all threads",
    },
];

struct Block {
    ptr: *mut u8,
    size: usize,
    tag: u64,
}

/// Draws a size: 70% small objects, 25% medium, 4.5% large, 0.5% up to max.
fn draw_size(r: u64, max_size: usize) -> usize {
    let pick = r % 1000;
    let x = (r >> 10) as usize;
    let size = if pick < 700 {
        16 + x % 240
    } else if pick < 950 {
        256 + x % 3840
    } else if pick < 995 {
        4096 + x % 60_000
    } else {
        65_536 + x % max_size.saturating_sub(65_536).max(1)
    };
    size.min(max_size).max(16)
}

/// Writes the tag at both ends and marks every page (or every byte of a small block).
unsafe fn fill(b: &Block) {
    let byte = b.tag as u8;
    if b.size <= 1024 {
        std::ptr::write_bytes(b.ptr, byte, b.size);
    } else {
        let mut off = 0;
        while off < b.size {
            *b.ptr.add(off) = byte;
            off += PAGE;
        }
    }
    (b.ptr as *mut u64).write_unaligned(b.tag);
    (b.ptr.add(b.size - 8) as *mut u64).write_unaligned(b.tag);
}

/// Reads back what `fill` wrote into `b`, of which only the first `readable`
/// bytes still exist (less than b.size after a shrinking realloc).
unsafe fn verify(b: &Block, readable: usize) -> Result<(), WorkloadError> {
    let end = b.size.min(readable);
    let head_ok = (b.ptr as *const u64).read_unaligned() == b.tag;
    let tail_ok =
        readable < b.size || (b.ptr.add(b.size - 8) as *const u64).read_unaligned() == b.tag;
    let byte = b.tag as u8;
    let step = if b.size <= 1024 { 1 } else { PAGE };
    let mut off = step.max(8);
    let mut body_ok = true;
    while off + 8 < end {
        body_ok &= *b.ptr.add(off) == byte;
        off += step;
    }
    if !(head_ok && tail_ok && body_ok) {
        return Err(failed!(
            "memory corruption: a block of {} bytes did not hold what was written",
            b.size
        ));
    }
    Ok(())
}

// Never inlined into its thread's closure: a profiled run (`benchlab explain`) names the workload's
// loop `churn` rather than the standard library's thread entry it would otherwise be folded into.
#[inline(never)]
fn churn(
    seed: u64,
    thread: u64,
    ops: u64,
    slots: usize,
    max_size: usize,
) -> Result<Digest, WorkloadError> {
    let mut rng = Pcg64::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ thread);
    let hot = (slots / 10).max(1);
    let cold = (slots - hot).max(1);
    let mut table: Vec<Block> = (0..slots)
        .map(|_| Block {
            ptr: std::ptr::null_mut(),
            size: 0,
            tag: 0,
        })
        .collect();
    let mut digest = Digest::new();
    let result = (|| {
        for _ in 0..ops {
            let r = rng.next_u64();
            let idx = if r % 10 < 9 {
                (r >> 8) as usize % hot
            } else {
                hot + (r >> 8) as usize % cold
            } % slots;
            let size = draw_size(rng.next_u64(), max_size);
            let tag = rng.next_u64() | 1;
            let b = &mut table[idx];
            // SAFETY: every non-null pointer in the table came from malloc/realloc with b.size bytes.
            unsafe {
                if !b.ptr.is_null() {
                    verify(b, b.size)?;
                    digest.word(b.tag ^ b.size as u64);
                    if (r >> 40) % 20 == 0 {
                        let p = libc::realloc(b.ptr as *mut libc::c_void, size) as *mut u8;
                        if p.is_null() {
                            return Err(failed!("realloc of {size} bytes failed"));
                        }
                        b.ptr = p;
                        verify(b, size)?;
                    } else {
                        libc::free(b.ptr as *mut libc::c_void);
                        b.ptr = libc::malloc(size) as *mut u8;
                        if b.ptr.is_null() {
                            return Err(failed!("malloc of {size} bytes failed"));
                        }
                    }
                } else {
                    b.ptr = libc::malloc(size) as *mut u8;
                    if b.ptr.is_null() {
                        return Err(failed!("malloc of {size} bytes failed"));
                    }
                }
                b.size = size;
                b.tag = tag;
                fill(b);
            }
        }
        Ok(())
    })();
    for b in &table {
        if !b.ptr.is_null() {
            // SAFETY: as above; each block is freed once.
            unsafe {
                if result.is_ok() {
                    verify(b, b.size)?;
                    digest.word(b.tag ^ b.size as u64);
                }
                libc::free(b.ptr as *mut libc::c_void);
            }
        }
    }
    result.map(|_| digest)
}

impl Workload for AllocChurn {
    fn about(&self) -> About {
        About { name: "alloc.churn", description: "multi-threaded malloc/free/realloc churn of mixed sizes and lifetimes, every block verified", version: 1, options: OPTIONS, metrics: METRICS }
    }
    fn run(&self, opts: &Options, _said: &mut Said) -> Result<Vec<Entry>, WorkloadError> {
        let threads = opts.int("threads")?;
        let ops = opts.int("ops")?;
        let slots = opts.int("slots")? as usize;
        let max_size = opts.int("max-size")? as usize;
        let seed = opts.int("seed")?;
        let watch = Stopwatch::start(false);
        let digests: Vec<Result<Digest, WorkloadError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| s.spawn(move || churn(seed, t, ops, slots, max_size)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(failed!("a churn thread panicked")))
                })
                .collect()
        });
        let (wall, cpu) = watch.elapsed();
        let mut total = Digest::new();
        for d in digests {
            total.word(d?.0);
        }
        let all_ops = (ops * threads) as f64;
        Ok(vec![Entry {
            name: "alloc.churn".into(),
            iterations: ops * threads,
            threads,
            real_time_ns: wall / ops as f64,
            cpu_time_ns: cpu / all_ops,
            items_per_second: Some(all_ops / (wall / 1e9)),
            bytes_per_second: None,
            counters: vec![],
            checksum: total.hex(),
        }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_stay_within_bounds() {
        let mut rng = Pcg64::seed_from_u64(1);
        for _ in 0..100_000 {
            let s = draw_size(rng.next_u64(), 256 * 1024);
            assert!((16..=256 * 1024).contains(&s));
        }
    }

    #[test]
    fn churn_is_deterministic_and_seed_dependent() {
        let a = churn(1, 0, 20_000, 512, 100_000).unwrap().0;
        let b = churn(1, 0, 20_000, 512, 100_000).unwrap().0;
        let c = churn(2, 0, 20_000, 512, 100_000).unwrap().0;
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn verify_catches_a_changed_byte() {
        let mut buf = vec![0u8; 64];
        let b = Block {
            ptr: buf.as_mut_ptr(),
            size: 64,
            tag: 0x1234_5678_9abc_def1,
        };
        unsafe {
            fill(&b);
            assert!(verify(&b, 64).is_ok());
            *b.ptr.add(20) ^= 0xff;
            assert!(verify(&b, 64).is_err());
        }
    }
}
