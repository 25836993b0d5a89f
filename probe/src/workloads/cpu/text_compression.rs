//! cpu.text_compression: a generated English-like corpus through two real codecs, zstd
//! (level 3, as most tools default) and xz/LZMA2 (preset 3) from liblzma; each round
//! compresses and decompresses with both and checks the text came back unchanged. The
//! two codecs are the round's two parts, so `--part 0` times zstd alone, on the corpus
//! `--save-input` writes, for a comparison with `zstd -b3` on the same file.

use super::{fold, Task};
use crate::workload::{failed, WorkloadError};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::io::{Read, Write};

pub struct TextCompression;

const CORPUS: usize = 1 << 20;
const ZSTD_LEVEL: i32 = 3;
const XZ_PRESET: u32 = 3;

/// Words with Zipf-like frequencies, sentences and paragraphs: text that compresses the way
/// prose does (a random byte stream would not compress at all).
pub fn corpus(seed: u64, size: usize) -> Vec<u8> {
    let mut rng = Pcg64::seed_from_u64(seed);
    let vocabulary: Vec<String> = (0..4000)
        .map(|_| {
            let len = rng.random_range(2..=10);
            (0..len)
                .map(|_| (b'a' + rng.random_range(0..26u8)) as char)
                .collect()
        })
        .collect();
    let mut text = Vec::with_capacity(size + 64);
    let mut sentence = 0;
    while text.len() < size {
        // Zipf: rank r is drawn with probability ~ 1/r
        let rank = ((vocabulary.len() as f64).powf(rng.random::<f64>()) as usize)
            .min(vocabulary.len())
            - 1;
        let word = vocabulary[rank].as_bytes();
        if sentence == 0 {
            text.push(word[0].to_ascii_uppercase());
            text.extend_from_slice(&word[1..]);
        } else {
            text.extend_from_slice(word);
        }
        sentence += 1;
        if sentence > rng.random_range(6..20) {
            text.extend_from_slice(if rng.random_bool(0.15) {
                b".\n\n"
            } else {
                b". "
            });
            sentence = 0;
        } else {
            text.push(if rng.random_bool(0.08) { b',' } else { b' ' });
        }
    }
    text.truncate(size);
    text
}

impl Task for TextCompression {
    type Input = Vec<u8>;
    type Scratch = ();
    const NAME: &'static str = "cpu.text_compression";
    const SECTION: &'static str = "integer";
    const DESCRIPTION: &'static str =
        "zstd and xz (LZMA2) compress and decompress a 1 MiB generated text corpus (work: bytes of text)";
    const VERSION: u32 = 2;
    const ITERATIONS: u64 = 1;
    const WORK_UNIT: &'static str = "B";
    const PARTS: usize = 2;
    const SHARES: bool = false; // xz takes ~30x zstd's time: two threads could not share the round

    fn prepare(&self, seed: u64) -> Vec<u8> {
        corpus(seed, CORPUS)
    }

    fn scratch(&self, _input: &Vec<u8>) {}

    fn work(&self, input: &Vec<u8>) -> f64 {
        input.len() as f64
    }

    fn input_file(&self, text: &Vec<u8>) -> Option<Vec<u8>> {
        Some(text.clone())
    }

    fn part(&self, text: &Vec<u8>, _: &mut (), index: usize) -> Result<u64, WorkloadError> {
        let packed = compress(text, index)?;
        let back = decompress(&packed, index, text.len())?;
        check(text, &packed, &back, index)
    }
}

const CODECS: [&str; 2] = ["zstd", "xz"];

/// The text compressed by codec `codec` (0: zstd, 1: xz).
fn compress(text: &[u8], codec: usize) -> Result<Vec<u8>, WorkloadError> {
    if codec == 0 {
        zstd::bulk::compress(text, ZSTD_LEVEL).map_err(|e| WorkloadError::io("zstd", e))
    } else {
        let mut encoder = xz2::write::XzEncoder::new(Vec::with_capacity(text.len() / 2), XZ_PRESET);
        encoder
            .write_all(text)
            .map_err(|e| WorkloadError::io("xz", e))?;
        encoder.finish().map_err(|e| WorkloadError::io("xz", e))
    }
}

/// `packed` decompressed by codec `codec`; `size`: the text's length.
fn decompress(packed: &[u8], codec: usize, size: usize) -> Result<Vec<u8>, WorkloadError> {
    if codec == 0 {
        zstd::bulk::decompress(packed, size).map_err(|e| WorkloadError::io("zstd", e))
    } else {
        let mut back = Vec::with_capacity(size);
        xz2::read::XzDecoder::new(packed)
            .read_to_end(&mut back)
            .map_err(|e| WorkloadError::io("xz", e))?;
        Ok(back)
    }
}

/// The decompressed text must be the text, and the text must have compressed at least 2:1.
/// Returns the compressed stream's checksum.
fn check(text: &[u8], packed: &[u8], back: &[u8], codec: usize) -> Result<u64, WorkloadError> {
    if back != text {
        return Err(failed!("{} did not give back the text", CODECS[codec]));
    }
    if packed.len() * 2 > text.len() {
        return Err(failed!(
            "the corpus compressed less than 2:1; the generator is broken"
        ));
    }
    Ok(fold(packed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_is_deterministic_text_that_compresses() {
        let a = corpus(1, 100_000);
        assert_eq!(a, corpus(1, 100_000));
        assert_ne!(a, corpus(2, 100_000));
        assert!(a.iter().all(|b| b.is_ascii()));
        let packed = zstd::bulk::compress(&a, 3).unwrap();
        assert!(packed.len() * 2 < a.len());
    }

    #[test]
    fn a_round_passes_and_a_corrupted_text_is_caught() {
        let text = corpus(1, 200_000);
        let sum = TextCompression.round(&text, &mut ()).unwrap();
        assert_eq!(TextCompression.round(&text, &mut ()), Ok(sum));
        for (codec, name) in CODECS.iter().enumerate() {
            let packed = compress(&text, codec).unwrap();
            let mut back = decompress(&packed, codec, text.len()).unwrap();
            assert_eq!(
                check(&text, &packed, &back, codec),
                TextCompression.part(&text, &mut (), codec)
            );
            // a byte of the decompressed text corrupted (a wrong match copied, a bit flip)
            back[text.len() / 2] ^= 0x20;
            let err = check(&text, &packed, &back, codec).unwrap_err();
            assert!(err.to_string().contains(name), "{err}");
            // the last byte lost
            back[text.len() / 2] ^= 0x20;
            back.pop();
            assert!(check(&text, &packed, &back, codec).is_err());
            // a byte of the compressed stream corrupted: decoding fails or gives other text
            let mut broken = packed.clone();
            broken[packed.len() / 2] ^= 0x04;
            assert!(decompress(&broken, codec, text.len())
                .and_then(|back| check(&text, &broken, &back, codec))
                .is_err());
        }
    }
}
