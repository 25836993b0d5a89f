//! cpu.image_compression: a synthetic photograph through a real JPEG encoder
//! (jpeg-encoder, quality 85, 4:2:0) and decoder (jpeg-decoder, the `image` crate's).
//! The decoded picture must match the original at more than 30 dB PSNR and the file must
//! be smaller than a fifth of the raw pixels, or the codec did not do its job.

use super::image::{photo, psnr, Rgb};
use super::{fold, Task};
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
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 14;
    const WORK_UNIT: &'static str = "pixels";

    fn prepare(&self, seed: u64) -> Rgb {
        photo(seed, WIDTH, HEIGHT)
    }

    fn scratch(&self, _input: &Rgb) {}

    fn work(&self, input: &Rgb) -> f64 {
        (input.width * input.height) as f64
    }

    fn round(&self, image: &Rgb, _: &mut ()) -> Result<u64, String> {
        let jpeg = encode(image)?;
        let decoded = decode(&jpeg)?;
        check(image, &jpeg, &decoded)
    }
}

fn encode(image: &Rgb) -> Result<Vec<u8>, String> {
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
        .map_err(|e| format!("jpeg encode: {e}"))?;
    Ok(jpeg)
}

fn decode(jpeg: &[u8]) -> Result<Rgb, String> {
    let mut decoder = jpeg_decoder::Decoder::new(jpeg);
    let pixels = decoder.decode().map_err(|e| format!("jpeg decode: {e}"))?;
    let info = decoder.info().ok_or("jpeg decode: no image info")?;
    Ok(Rgb {
        width: info.width as usize,
        height: info.height as usize,
        pixels,
    })
}

/// The decoded picture must have the original's size and be close to it, and the file
/// must be smaller than a fifth of the raw pixels. Returns the checksum of both.
fn check(image: &Rgb, jpeg: &[u8], decoded: &Rgb) -> Result<u64, String> {
    if (decoded.width, decoded.height) != (image.width, image.height)
        || decoded.pixels.len() != image.pixels.len()
    {
        return Err("the decoded image has another size".into());
    }
    let quality = psnr(&image.pixels, &decoded.pixels);
    if quality < 30.0 {
        return Err(format!(
            "the decoded image is too far from the original ({quality:.1} dB)"
        ));
    }
    if jpeg.len() * 5 > image.pixels.len() {
        return Err(format!(
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
            .contains("too far"));
        // the last row missing
        let mut short = Rgb {
            height: decoded.height - 1,
            pixels: decoded.pixels.clone(),
            ..decoded
        };
        short.pixels.truncate(short.width * short.height * 3);
        assert!(check(&image, &jpeg, &short).unwrap_err().contains("size"));
        // the chroma planes lost: a grey picture
        let mut grey = Rgb {
            pixels: decoded.pixels.clone(),
            ..decoded
        };
        for p in grey.pixels.chunks_exact_mut(3) {
            let y = ((p[0] as u32 * 77 + p[1] as u32 * 150 + p[2] as u32 * 29) >> 8) as u8;
            p.fill(y);
        }
        assert!(check(&image, &jpeg, &grey).unwrap_err().contains("too far"));
    }
}
