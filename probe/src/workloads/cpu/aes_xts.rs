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
        encrypt(input, buf, index);
        check(input, buf, index)
    }
}

fn first_sector(index: usize) -> u128 {
    (index * PART / SECTOR) as u128
}

/// Encrypts part `index` of the volume into `buf`, at its own sector numbers.
fn encrypt(input: &Input, buf: &mut [u8], index: usize) {
    buf.copy_from_slice(&input.plain[index * PART..(index + 1) * PART]);
    input
        .xts
        .encrypt_area(buf, SECTOR, first_sector(index), get_tweak_default);
}

/// Checks the ciphertext of part `index` in `buf`: it must differ from the plaintext and
/// decrypt back to it (which leaves the plaintext in `buf`). Returns its checksum.
fn check(input: &Input, buf: &mut [u8], index: usize) -> Result<u64, String> {
    let plain = &input.plain[index * PART..(index + 1) * PART];
    if buf[..SECTOR] == plain[..SECTOR] {
        return Err("encryption left a sector unchanged".into());
    }
    let checksum = fold(buf);
    input
        .xts
        .decrypt_area(buf, SECTOR, first_sector(index), get_tweak_default);
    if buf[..] != *plain {
        return Err("decryption did not give back the plaintext".into());
    }
    Ok(checksum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_passes_and_a_broken_ciphertext_is_caught() {
        let input = AesXts.prepare(1);
        let mut buf = AesXts.scratch(&input);
        let sum = AesXts.round(&input, &mut buf).unwrap();
        assert_eq!(AesXts.round(&input, &mut buf), Ok(sum));
        assert_ne!(AesXts.round(&AesXts.prepare(2), &mut buf), Ok(sum));
        let part = AesXts.part(&input, &mut buf, 5).unwrap();
        encrypt(&input, &mut buf, 5);
        assert_eq!(check(&input, &mut buf, 5), Ok(part));
        // a byte of the ciphertext flipped (a bit error on the disk, a cipher bug)
        encrypt(&input, &mut buf, 5);
        buf[PART / 2 + 3] ^= 0x10;
        assert!(check(&input, &mut buf, 5)
            .unwrap_err()
            .contains("decryption"));
        // a part encrypted at the next part's sector numbers (a wrong tweak)
        buf.copy_from_slice(&input.plain[5 * PART..6 * PART]);
        input
            .xts
            .encrypt_area(&mut buf, SECTOR, first_sector(6), get_tweak_default);
        assert!(check(&input, &mut buf, 5)
            .unwrap_err()
            .contains("decryption"));
        // the encryption skipped: the plaintext left in place
        buf.copy_from_slice(&input.plain[5 * PART..6 * PART]);
        assert!(check(&input, &mut buf, 5)
            .unwrap_err()
            .contains("unchanged"));
    }
}
