//! What crosses between the processes of a pair and back to the parent: the
//! header of every message, and one pair's results as little-endian words.

/// Every message starts with the iteration's sequence number, the client's
/// CPU when it sent, and the server's CPU when it handled the request.
pub const HEADER: usize = 16;

pub fn write_u32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub fn read_u32(buf: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(buf[at..at + 4].try_into().unwrap())
}

pub fn read_u64(buf: &[u8]) -> u64 {
    u64::from_le_bytes(buf[..8].try_into().unwrap())
}

/// What one pair measured, sent from its client to the parent through a pipe.
#[derive(Default)]
pub struct PairResult {
    pub other: Vec<u64>,
    pub fifo: Vec<u64>,
    pub same_cpu_other: u64,
    pub same_cpu_fifo: u64,
    pub migrations: Option<u64>,
    pub cpu_other_ns: u64, // client and server over the timed SCHED_OTHER transactions
    pub cpu_fifo_ns: u64,  // and over the SCHED_FIFO ones
}

const NONE: u64 = u64::MAX;

impl PairResult {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut words = vec![
            self.same_cpu_other,
            self.same_cpu_fifo,
            self.migrations.unwrap_or(NONE),
            self.cpu_other_ns,
            self.cpu_fifo_ns,
            self.other.len() as u64,
            self.fifo.len() as u64,
        ];
        words.extend(&self.other);
        words.extend(&self.fifo);
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// None when the bytes are not one whole result (a client that died half-way).
    pub fn from_bytes(bytes: &[u8]) -> Option<PairResult> {
        if !bytes.len().is_multiple_of(8) {
            return None;
        }
        let w: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let (head, rest) = (w.get(..7)?, w.get(7..)?);
        let (n_other, n_fifo) = (head[5] as usize, head[6] as usize);
        if rest.len() != n_other + n_fifo {
            return None;
        }
        let some = |v: u64| (v != NONE).then_some(v);
        Some(PairResult {
            same_cpu_other: head[0],
            same_cpu_fifo: head[1],
            migrations: some(head[2]),
            cpu_other_ns: head[3],
            cpu_fifo_ns: head[4],
            other: rest[..n_other].to_vec(),
            fifo: rest[n_other..].to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_survive_the_pipe_format() {
        let r = PairResult {
            other: vec![5, 6, 7],
            fifo: vec![8],
            same_cpu_other: 2,
            same_cpu_fifo: 1,
            migrations: None,
            cpu_other_ns: 99,
            cpu_fifo_ns: 101,
        };
        let back = PairResult::from_bytes(&r.to_bytes()).unwrap();
        assert_eq!(
            (
                back.other,
                back.fifo,
                back.migrations,
                back.cpu_other_ns,
                back.cpu_fifo_ns
            ),
            (vec![5, 6, 7], vec![8], None, 99, 101)
        );
        assert!(PairResult::from_bytes(&r.to_bytes()[..56]).is_none());
        assert!(PairResult::from_bytes(&r.to_bytes()[..57]).is_none());
    }
}
