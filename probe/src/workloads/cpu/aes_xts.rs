//! cpu.aes_xts: AES-256-XTS over disk-sized sectors, the way full-disk encryption uses it,
//! through RustCrypto's `aes` (AES-NI where the CPU has it) and `xts-mode`. A round
//! covers the 4 MiB volume in 64 KiB parts (the shared-task mode's unit): each part is
//! encrypted at its own sector numbers, folded into the checksum, decrypted and checked.
//! The check also recomputes one sector of each part by a hand-written XTS (IEEE 1619:
//! the tweak is the sector number enciphered with the second key, multiplied by alpha in
//! GF(2^128) from block to block) on the bare `aes` block cipher: a known answer that a
//! bug symmetric in encryption and decryption (a wrong sector numbering, another mode)
//! cannot meet. That reference is itself tested against IEEE 1619's vector 10.

use super::{fold, Task};
use crate::workload::{failed, WorkloadError};
use aes::cipher::{BlockEncrypt, KeyInit};
use aes::{Aes256, Block};
use rand::{RngCore, SeedableRng};
use rand_pcg::Pcg64;
use xts_mode::{get_tweak_default, Xts128};

pub struct AesXts;

const SECTOR: usize = 4096;
const BUFFER: usize = 4 << 20;
const PART: usize = 64 << 10;

pub struct Input {
    xts: Xts128<Aes256>,
    /// The data key and the tweak key again, for the hand-written reference.
    keys: (Aes256, Aes256),
    plain: Vec<u8>,
}

impl Task for AesXts {
    type Input = Input;
    type Scratch = Vec<u8>;
    const NAME: &'static str = "cpu.aes_xts";
    const SECTION: &'static str = "crypto";
    const DESCRIPTION: &'static str = "AES-256-XTS encrypt and decrypt of 4 MiB in 4 KiB sectors (work: bytes through the cipher)";
    const VERSION: u32 = 3;
    const ITERATIONS: u64 = 32;
    const WORK_UNIT: &'static str = "B";
    const PARTS: usize = BUFFER / PART;

    fn prepare(&self, seed: u64) -> Input {
        let mut rng = Pcg64::seed_from_u64(seed);
        let mut keys = [0u8; 64];
        rng.fill_bytes(&mut keys);
        let mut plain = vec![0u8; BUFFER];
        rng.fill_bytes(&mut plain);
        let key1 = Aes256::new_from_slice(&keys[..32]).expect("32-byte key");
        let key2 = Aes256::new_from_slice(&keys[32..]).expect("32-byte key");
        let xts = Xts128::new(key1.clone(), key2.clone());
        Input {
            xts,
            keys: (key1, key2),
            plain,
        }
    }

    fn scratch(&self, _input: &Input) -> Vec<u8> {
        vec![0u8; PART]
    }

    fn work(&self, input: &Input) -> f64 {
        2.0 * input.plain.len() as f64
    }

    fn part(&self, input: &Input, buf: &mut Vec<u8>, index: usize) -> Result<u64, WorkloadError> {
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

/// XTS-AES encryption of one data unit (a whole number of 16-byte blocks) at sequence
/// number `unit`, written out from IEEE 1619 on the bare block cipher: T = E(key2, unit as
/// 16 little-endian bytes); each block is C = E(key1, P ^ T) ^ T, then T *= alpha.
fn reference_xts(key1: &Aes256, key2: &Aes256, unit: u128, plain: &[u8], out: &mut [u8]) {
    let mut tweak = Block::clone_from_slice(&unit.to_le_bytes());
    key2.encrypt_block(&mut tweak);
    for (p, c) in plain.chunks_exact(16).zip(out.chunks_exact_mut(16)) {
        let mut block = Block::default();
        for k in 0..16 {
            block[k] = p[k] ^ tweak[k];
        }
        key1.encrypt_block(&mut block);
        for k in 0..16 {
            c[k] = block[k] ^ tweak[k];
        }
        // multiply by alpha: a left shift of the little-endian 128-bit number, reduced
        // by x^128 = x^7 + x^2 + x + 1
        let t = u128::from_le_bytes(tweak.as_slice().try_into().expect("16 bytes"));
        let t = (t << 1) ^ if t >> 127 == 1 { 0x87 } else { 0 };
        tweak.copy_from_slice(&t.to_le_bytes());
    }
}

/// Which sector of part `index` the check recomputes: a different one from part to part.
fn sampled_sector(index: usize) -> usize {
    (index * 7 + 3) % (PART / SECTOR)
}

/// Checks the ciphertext of part `index` in `buf`: one sector of it must be what the
/// hand-written XTS gives at its sector number, and all of it must decrypt back to the
/// plaintext (which leaves the plaintext in `buf`). Returns its checksum.
fn check(input: &Input, buf: &mut [u8], index: usize) -> Result<u64, WorkloadError> {
    let plain = &input.plain[index * PART..(index + 1) * PART];
    if buf[..SECTOR] == plain[..SECTOR] {
        return Err(failed!("encryption left a sector unchanged"));
    }
    let s = sampled_sector(index);
    let mut want = [0u8; SECTOR];
    let (key1, key2) = &input.keys;
    reference_xts(
        key1,
        key2,
        first_sector(index) + s as u128,
        &plain[s * SECTOR..(s + 1) * SECTOR],
        &mut want,
    );
    if buf[s * SECTOR..(s + 1) * SECTOR] != want {
        return Err(failed!(
            "sector {} is not its XTS-AES ciphertext (IEEE 1619)",
            first_sector(index) + s as u128
        ));
    }
    let checksum = fold(buf);
    input
        .xts
        .decrypt_area(buf, SECTOR, first_sector(index), get_tweak_default);
    if buf[..] != *plain {
        return Err(failed!("decryption did not give back the plaintext"));
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
            .to_string()
            .contains("decryption"));
        // a part encrypted at the next part's sector numbers (a wrong tweak)
        buf.copy_from_slice(&input.plain[5 * PART..6 * PART]);
        input
            .xts
            .encrypt_area(&mut buf, SECTOR, first_sector(6), get_tweak_default);
        assert!(check(&input, &mut buf, 5).is_err());
        // the whole volume numbered from 1 (decryption agrees, the known answer does not)
        buf.copy_from_slice(&input.plain[5 * PART..6 * PART]);
        input
            .xts
            .encrypt_area(&mut buf, SECTOR, first_sector(5) + 1, get_tweak_default);
        let mut back = buf.clone();
        input
            .xts
            .decrypt_area(&mut back, SECTOR, first_sector(5) + 1, get_tweak_default);
        assert_eq!(back[..], input.plain[5 * PART..6 * PART]);
        assert!(check(&input, &mut buf, 5)
            .unwrap_err()
            .to_string()
            .contains("IEEE 1619"));
        // another mode: ECB with the data key (symmetric too)
        buf.copy_from_slice(&input.plain[5 * PART..6 * PART]);
        for block in buf.chunks_exact_mut(16) {
            input.keys.0.encrypt_block(Block::from_mut_slice(block));
        }
        assert!(check(&input, &mut buf, 5)
            .unwrap_err()
            .to_string()
            .contains("IEEE 1619"));
        // the sector numbers big-endian in the tweak
        buf.copy_from_slice(&input.plain[5 * PART..6 * PART]);
        input
            .xts
            .encrypt_area(&mut buf, SECTOR, first_sector(5), |n| n.to_be_bytes());
        assert!(check(&input, &mut buf, 5)
            .unwrap_err()
            .to_string()
            .contains("IEEE 1619"));
        // the encryption skipped: the plaintext left in place
        buf.copy_from_slice(&input.plain[5 * PART..6 * PART]);
        assert!(check(&input, &mut buf, 5)
            .unwrap_err()
            .to_string()
            .contains("unchanged"));
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// IEEE 1619-2007, XTS-AES-256 test vector 10: data unit 0xff, 512 bytes 00..ff twice.
    #[test]
    fn the_reference_xts_meets_ieee_1619_vector_10() {
        let key1 = hex("2718281828459045235360287471352662497757247093699959574966967627");
        let key2 = hex("3141592653589793238462643383279502884197169399375105820974944592");
        let plain: Vec<u8> = (0..512).map(|i| i as u8).collect();
        let want = hex(concat!(
            "1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b",
            "5d31e276f8fe4a8d66b317f9ac683f44680a86ac35adfc3345befecb4bb188fd",
            "5776926c49a3095eb108fd1098baec70aaa66999a72a82f27d848b21d4a741b0",
            "c5cd4d5fff9dac89aeba122961d03a757123e9870f8acf1000020887891429ca",
            "2a3e7a7d7df7b10355165c8b9a6d0a7de8b062c4500dc4cd120c0f7418dae3d0",
            "b5781c34803fa75421c790dfe1de1834f280d7667b327f6c8cd7557e12ac3a0f",
            "93ec05c52e0493ef31a12d3d9260f79a289d6a379bc70c50841473d1a8cc81ec",
            "583e9645e07b8d9670655ba5bbcfecc6dc3966380ad8fecb17b6ba02469a020a",
            "84e18e8f84252070c13e9f1f289be54fbc481457778f616015e1327a02b140f1",
            "505eb309326d68378f8374595c849d84f4c333ec4423885143cb47bd71c5edae",
            "9be69a2ffeceb1bec9de244fbe15992b11b77c040f12bd8f6a975a44a0f90c29",
            "a9abc3d4d893927284c58754cce294529f8614dcd2aba991925fedc4ae74ffac",
            "6e333b93eb4aff0479da9a410e4450e0dd7ae4c6e2910900575da401fc07059f",
            "645e8b7e9bfdef33943054ff84011493c27b3429eaedb4ed5376441a77ed4385",
            "1ad77f16f541dfd269d50d6a5f14fb0aab1cbb4c1550be97f7ab4066193c4caa",
            "773dad38014bd2092fa755c824bb5e54c4f36ffda9fcea70b9c6e693e148c151",
        ));
        let key1 = Aes256::new_from_slice(&key1).unwrap();
        let key2 = Aes256::new_from_slice(&key2).unwrap();
        let mut got = vec![0u8; 512];
        reference_xts(&key1, &key2, 0xff, &plain, &mut got);
        assert_eq!(got, want);
        // and the library agrees with it there
        let mut lib = plain.clone();
        Xts128::new(key1.clone(), key2.clone()).encrypt_area(
            &mut lib,
            512,
            0xff,
            get_tweak_default,
        );
        assert_eq!(lib, want);
        // a reference with another sector number does not meet it
        reference_xts(&key1, &key2, 0xfe, &plain, &mut got);
        assert_ne!(got, want);
    }
}
