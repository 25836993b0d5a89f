//! cpu.aes_xts: AES-256-XTS over disk-sized sectors, the way full-disk encryption uses it,
//! through RustCrypto's `aes` (AES-NI where the CPU has it) and `xts-mode`. Each round
//! encrypts the buffer, folds the ciphertext into the checksum, decrypts it and checks
//! that the plaintext came back.

use super::{fold, Task};
use aes::cipher::KeyInit;
use aes::Aes256;
use rand::{RngCore, SeedableRng};
use rand_pcg::Pcg64;
use xts_mode::{get_tweak_default, Xts128};

pub struct AesXts;

const SECTOR: usize = 4096;
const BUFFER: usize = 4 << 20;

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
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 16;
    const WORK_UNIT: &'static str = "B";

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

    fn scratch(&self, input: &Input) -> Vec<u8> {
        vec![0u8; input.plain.len()]
    }

    fn work(&self, input: &Input) -> f64 {
        2.0 * input.plain.len() as f64
    }

    fn round(&self, input: &Input, buf: &mut Vec<u8>) -> Result<u64, String> {
        buf.copy_from_slice(&input.plain);
        input.xts.encrypt_area(buf, SECTOR, 0, get_tweak_default);
        if buf[..SECTOR] == input.plain[..SECTOR] {
            return Err("encryption left the first sector unchanged".into());
        }
        let checksum = fold(buf);
        input.xts.decrypt_area(buf, SECTOR, 0, get_tweak_default);
        if *buf != input.plain {
            return Err("decryption did not give back the plaintext".into());
        }
        Ok(checksum)
    }
}
