//! cpu.aes_xts: AES-256-XTS over disk-sized sectors, the way full-disk encryption uses it,
//! through RustCrypto's `aes` (AES-NI where the CPU has it) and `xts-mode`. A round
//! covers the 4 MiB volume in 64 KiB parts (the shared-task mode's unit): each part is
//! encrypted at its own sector numbers, folded into the checksum, decrypted and checked.

use super::{fold, Task};
use aes::cipher::KeyInit;
use aes::Aes256;
use rand::{RngCore, SeedableRng};
use rand_pcg::Pcg64;
use xts_mode::{get_tweak_default, Xts128};

pub struct AesXts;

const SECTOR: usize = 4096;
const BUFFER: usize = 4 << 20;
const PART: usize = 64 << 10;

pub struct Input {
    xts: Xts128<Aes256>,
    plain: Vec<u8>,
}

impl Task for AesXts {
    type Input = Input;
    type Scratch = Vec<u8>;
    const NAME: &'static str = "cpu.aes_xts";
    const SECTION: &'static str = "crypto";
    const DESCRIPTION: &'static str = "AES-256-XTS encrypt and decrypt of 4 MiB in 4 KiB sectors (work: bytes through the cipher)";
    const VERSION: u32 = 2;
    const ITERATIONS: u64 = 32;
    const WORK_UNIT: &'static str = "B";
    const PARTS: usize = BUFFER / PART;

    fn prepare(&self, seed: u64) -> Input {
        let mut rng = Pcg64::seed_from_u64(seed);
        let mut keys = [0u8; 64];
        rng.fill_bytes(&mut keys);
        let mut plain = vec![0u8; BUFFER];
        rng.fill_bytes(&mut plain);
        let xts = Xts128::new(
            Aes256::new_from_slice(&keys[..32]).expect("32-byte key"),
            Aes256::new_from_slice(&keys[32..]).expect("32-byte key"),
        );
        Input { xts, plain }
    }

    fn scratch(&self, _input: &Input) -> Vec<u8> {
        vec![0u8; PART]
    }

    fn work(&self, input: &Input) -> f64 {
        2.0 * input.plain.len() as f64
    }

    fn part(&self, input: &Input, buf: &mut Vec<u8>, index: usize) -> Result<u64, String> {
        let plain = &input.plain[index * PART..(index + 1) * PART];
        buf.copy_from_slice(plain);
        let first_sector = (index * PART / SECTOR) as u128;
        input
            .xts
            .encrypt_area(buf, SECTOR, first_sector, get_tweak_default);
        if buf[..SECTOR] == plain[..SECTOR] {
            return Err("encryption left a sector unchanged".into());
        }
        let checksum = fold(buf);
        input
            .xts
            .decrypt_area(buf, SECTOR, first_sector, get_tweak_default);
        if buf[..] != *plain {
            return Err("decryption did not give back the plaintext".into());
        }
        Ok(checksum)
    }
}
