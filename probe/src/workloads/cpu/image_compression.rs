//! cpu.image_compression: a synthetic photograph through a real JPEG encoder
//! (jpeg-encoder, quality 85, 4:2:0) and decoder (jpeg-decoder, the `image` crate's).
//! The decoded picture must match the original at more than 30 dB PSNR and the file must
//! be smaller than a fifth of the raw pixels, or the codec did not do its job.

use super::image::{aligned, photo, psnr, Rgb};
use super::{fold, Task};
use crate::workload::{failed, WorkloadError};
use jpeg_encoder::{ColorType, Encoder, SamplingFactor};

pub struct ImageCompression;

const WIDTH: usize = 1024;
const HEIGHT: usize = 768;
const QUALITY: u8 = 85;

impl Task for ImageCompression {
    type Input = Rgb;
    type Scratch = ();
    const NAME: &'static str = "cpu.image_compression";
    const SECTION: &'static str = "integer";
    const DESCRIPTION: &'static str =
        "JPEG encode (quality 85, 4:2:0) and decode of a 1024x768 synthetic photo (work: pixels)";
    const VERSION: u32 = 2;
    const ITERATIONS: u64 = 14;
    const WORK_UNIT: &'static str = "pixels";

    fn prepare(&self, seed: u64) -> Rgb {
        photo(seed, WIDTH, HEIGHT)
    }

    fn scratch(&self, _input: &Rgb) {}

    fn work(&self, input: &Rgb) -> f64 {
        (input.width * input.height) as f64
    }

    fn round(&self, image: &Rgb, _: &mut ()) -> Result<u64, WorkloadError> {
        let jpeg = encode(image)?;
        let decoded = decode(&jpeg)?;
        check(image, &jpeg, &decoded)
    }
}

fn encode(image: &Rgb) -> Result<Vec<u8>, WorkloadError> {
    let mut jpeg = Vec::with_capacity(image.pixels.len() / 4);
    let mut encoder = Encoder::new(&mut jpeg, QUALITY);
    encoder.set_sampling_factor(SamplingFactor::R_4_2_0);
    encoder
        .encode(
            &image.pixels,
            image.width as u16,
            image.height as u16,
            ColorType::Rgb,
        )
        .map_err(|e| failed!("jpeg encode: {e}"))?;
    Ok(jpeg)
}

fn decode(jpeg: &[u8]) -> Result<Rgb, WorkloadError> {
    let mut decoder = jpeg_decoder::Decoder::new(jpeg);
    let pixels = decoder.decode().map_err(|e| failed!("jpeg decode: {e}"))?;
    let info = decoder
        .info()
        .ok_or(failed!("jpeg decode: no image info"))?;
    Ok(Rgb {
        width: info.width as usize,
        height: info.height as usize,
        pixels,
    })
}

/// The lowest PSNR the decoded picture may have: as a whole, in its worst 8x8 block and
/// in its worst stripe of 8 rows. Honest runs, seeds 1..20, reach at least 32.3, 13.9 and
/// 26.7 dB (one black row: 18 dB or less in its stripe): a block on a hard coloured edge is far off with 4:2:0 chroma, so the
/// block bound only catches gross damage (a block painted over), the stripes catch a
/// wrong row and the alignment test a shift.
const MIN_GLOBAL: f64 = 31.3;
const MIN_BLOCK: f64 = 10.0;
const MIN_STRIPE: f64 = 23.0;

/// PSNR of two RGB pictures as a whole, in their worst 8x8 block and in their worst stripe
/// of 8 rows.
fn quality(a: &Rgb, b: &[u8]) -> (f64, f64, f64) {
    let row = a.width * 3;
    let mut blocks = vec![0u64; a.width.div_ceil(8)];
    let (mut worst, mut total, mut stripe, mut worst_stripe) = (0u64, 0u64, 0u64, 0u64);
    for y in 0..a.height {
        let (ra, rb) = (
            &a.pixels[y * row..(y + 1) * row],
            &b[y * row..(y + 1) * row],
        );
        for (block, (ca, cb)) in blocks.iter_mut().zip(ra.chunks(24).zip(rb.chunks(24))) {
            *block += ca
                .iter()
                .zip(cb)
                .map(|(p, q)| (*p as i32 - *q as i32).pow(2) as u64)
                .sum::<u64>();
        }
        if y % 8 == 7 || y == a.height - 1 {
            for block in &mut blocks {
                worst = worst.max(*block);
                stripe += *block;
                *block = 0;
            }
            worst_stripe = worst_stripe.max(stripe);
            total += stripe;
            stripe = 0;
        }
    }
    (
        psnr(total as f64, a.pixels.len()),
        psnr(worst as f64, 8 * 8 * 3),
        psnr(worst_stripe as f64, 8 * row),
    )
}

/// The decoded picture must have the original's size and be close to it, as a whole, in
/// every 8x8 block and every stripe of 8 rows, and aligned with it (so that a block painted
/// over, a wrong row or a picture shifted by a pixel shows),
/// and the file must be smaller than a fifth of the raw pixels. Returns the checksum of
/// both.
fn check(image: &Rgb, jpeg: &[u8], decoded: &Rgb) -> Result<u64, WorkloadError> {
    if (decoded.width, decoded.height) != (image.width, image.height)
        || decoded.pixels.len() != image.pixels.len()
    {
        return Err(failed!("the decoded image has another size"));
    }
    let (global, block, stripe) = quality(image, &decoded.pixels);
    if global < MIN_GLOBAL {
        return Err(failed!(
            "the decoded image is too far from the original ({global:.1} dB)"
        ));
    }
    if block < MIN_BLOCK {
        return Err(failed!(
            "an 8x8 block of the decoded image is too far from the original ({block:.1} dB)"
        ));
    }
    if stripe < MIN_STRIPE {
        return Err(failed!(
            "a stripe of 8 rows of the decoded image is too far from the original ({stripe:.1} dB)"
        ));
    }
    aligned(&image.pixels, &decoded.pixels, image.width, image.height)?;
    if jpeg.len() * 5 > image.pixels.len() {
        return Err(failed!(
            "JPEG compressed only to {} of {} bytes",
            jpeg.len(),
            image.pixels.len()
        ));
    }
    Ok(fold(jpeg) ^ fold(&decoded.pixels).rotate_left(29))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_passes_and_a_wrong_decoded_picture_is_caught() {
        let image = ImageCompression.prepare(1);
        let sum = ImageCompression.round(&image, &mut ()).unwrap();
        assert_ne!(
            ImageCompression.round(&ImageCompression.prepare(2), &mut ()),
            Ok(sum)
        );
        let jpeg = encode(&image).unwrap();
        let decoded = decode(&jpeg).unwrap();
        assert_eq!(check(&image, &jpeg, &decoded), Ok(sum));
        // red and blue swapped by the decoder's colour conversion
        let mut swapped = Rgb {
            pixels: decoded.pixels.clone(),
            ..decoded
        };
        for p in swapped.pixels.chunks_exact_mut(3) {
            p.swap(0, 2);
        }
        assert!(check(&image, &jpeg, &swapped)
            .unwrap_err()
            .to_string()
            .contains("too far"));
        // the last row missing
        let mut short = Rgb {
            height: decoded.height - 1,
            pixels: decoded.pixels.clone(),
            ..decoded
        };
        short.pixels.truncate(short.width * short.height * 3);
        assert!(check(&image, &jpeg, &short)
            .unwrap_err()
            .to_string()
            .contains("size"));
        // the chroma planes lost: a grey picture
        let mut grey = Rgb {
            pixels: decoded.pixels.clone(),
            ..decoded
        };
        for p in grey.pixels.chunks_exact_mut(3) {
            let y = ((p[0] as u32 * 77 + p[1] as u32 * 150 + p[2] as u32 * 29) >> 8) as u8;
            p.fill(y);
        }
        assert!(check(&image, &jpeg, &grey)
            .unwrap_err()
            .to_string()
            .contains("too far"));
        let row = decoded.width * 3;
        let tampered = |change: &dyn Fn(&mut Vec<u8>)| {
            let mut pixels = decoded.pixels.clone();
            change(&mut pixels);
            check(&image, &jpeg, &Rgb { pixels, ..decoded })
        };
        // the picture moved one row up, or one pixel left (the alignment test, or the
        // tightened global bound)
        assert!(tampered(&|p| p.copy_within(row.., 0)).is_err());
        assert!(tampered(&|p| p.copy_within(3.., 0)).is_err());
        // one row black
        assert!(tampered(&|p| p[400 * row..401 * row].fill(0))
            .unwrap_err()
            .to_string()
            .contains("stripe"));
        // four 8x8 blocks white
        assert!(tampered(&|p| for k in 0..4 {
            for y in 0..8 {
                let o = ((200 + 8 * k + y) * 1024 + 296 + 64 * k) * 3;
                p[o..o + 24].fill(255);
            }
        })
        .unwrap_err()
        .to_string()
        .contains("8x8 block"));
    }
}
