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
        let mut decoder = jpeg_decoder::Decoder::new(&jpeg[..]);
        let decoded = decoder.decode().map_err(|e| format!("jpeg decode: {e}"))?;
        let info = decoder.info().ok_or("jpeg decode: no image info")?;
        if (info.width as usize, info.height as usize) != (image.width, image.height)
            || decoded.len() != image.pixels.len()
        {
            return Err("the decoded image has another size".into());
        }
        let quality = psnr(&image.pixels, &decoded);
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
        Ok(fold(&jpeg) ^ fold(&decoded).rotate_left(29))
    }
}
