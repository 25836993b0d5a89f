//! cpu.vector_rendering: anti-aliased paths rasterised by tiny-skia (a port of Skia's
//! raster backend): translucent filled and stroked Bezier shapes over a canvas. The same
//! round also fills a grid of circles whose exact area is known, and checks that the
//! rasteriser covered it to within 1%.

use super::{fold, Task};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use tiny_skia::{Color, FillRule, Paint, PathBuilder, Pixmap, Stroke, Transform};

pub struct VectorRendering;

const SIZE: u32 = 1024;
const SHAPES: usize = 400;
const CELL: f32 = 64.0;
const RADIUS: f32 = 24.5;

pub struct Shape {
    points: Vec<(f32, f32)>,
    rgba: [u8; 4],
    width: f32,
}

impl Task for VectorRendering {
    type Input = Vec<Shape>;
    type Scratch = (Pixmap, Pixmap);
    const NAME: &'static str = "cpu.vector_rendering";
    const SECTION: &'static str = "integer";
    const DESCRIPTION: &'static str =
        "tiny-skia fills and strokes 400 translucent Bezier shapes and 256 circles on 1024x1024 canvases (work: pixels)";
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 2;
    const WORK_UNIT: &'static str = "pixels";

    fn prepare(&self, seed: u64) -> Vec<Shape> {
        let mut rng = Pcg64::seed_from_u64(seed);
        (0..SHAPES)
            .map(|_| {
                let (cx, cy) = (
                    rng.random_range(0.0..SIZE as f32),
                    rng.random_range(0.0..SIZE as f32),
                );
                let spread = rng.random_range(20.0..260.0f32);
                let points = (0..3 * rng.random_range(2..6))
                    .map(|_| {
                        (
                            cx + rng.random_range(-spread..spread),
                            cy + rng.random_range(-spread..spread),
                        )
                    })
                    .collect();
                Shape {
                    points,
                    rgba: [
                        rng.random(),
                        rng.random(),
                        rng.random(),
                        rng.random_range(40..200),
                    ],
                    width: rng.random_range(0.5..6.0),
                }
            })
            .collect()
    }

    fn scratch(&self, _input: &Vec<Shape>) -> (Pixmap, Pixmap) {
        (
            Pixmap::new(SIZE, SIZE).expect("canvas"),
            Pixmap::new(SIZE, SIZE).expect("canvas"),
        )
    }

    fn work(&self, _input: &Vec<Shape>) -> f64 {
        2.0 * (SIZE * SIZE) as f64
    }

    fn round(
        &self,
        shapes: &Vec<Shape>,
        (art, disks): &mut (Pixmap, Pixmap),
    ) -> Result<u64, String> {
        draw(shapes, art, disks)?;
        check(art, disks)
    }
}

/// Circles per side of the disk canvas's grid.
fn per_side() -> usize {
    (SIZE as f32 / CELL) as usize
}

/// Paints the shapes on `art` and the grid of circles on `disks`.
fn draw(shapes: &[Shape], art: &mut Pixmap, disks: &mut Pixmap) -> Result<(), String> {
    art.fill(Color::WHITE);
    let mut paint = Paint {
        anti_alias: true,
        ..Paint::default()
    };
    for shape in shapes {
        let mut pb = PathBuilder::new();
        pb.move_to(shape.points[0].0, shape.points[0].1);
        for c in shape.points[1..].chunks_exact(3) {
            pb.cubic_to(c[0].0, c[0].1, c[1].0, c[1].1, c[2].0, c[2].1);
        }
        pb.close();
        let Some(path) = pb.finish() else { continue };
        let [r, g, b, a] = shape.rgba;
        paint.set_color_rgba8(r, g, b, a);
        art.fill_path(
            &path,
            &paint,
            FillRule::EvenOdd,
            Transform::identity(),
            None,
        );
        paint.set_color_rgba8(b, r, g, 255);
        art.stroke_path(
            &path,
            &paint,
            &Stroke {
                width: shape.width,
                ..Stroke::default()
            },
            Transform::identity(),
            None,
        );
    }
    disks.fill(Color::TRANSPARENT);
    paint.set_color_rgba8(0, 0, 0, 255);
    let per_side = per_side();
    for i in 0..per_side * per_side {
        let (x, y) = (
            (i % per_side) as f32 * CELL + CELL / 2.0,
            (i / per_side) as f32 * CELL + CELL / 2.0,
        );
        let circle = PathBuilder::from_circle(x, y, RADIUS).ok_or("no circle path")?;
        disks.fill_path(
            &circle,
            &paint,
            FillRule::Winding,
            Transform::identity(),
            None,
        );
    }
    Ok(())
}

/// The circles must cover their exact area to within 1%. Returns the checksum of the
/// art and the coverage.
fn check(art: &Pixmap, disks: &Pixmap) -> Result<u64, String> {
    let per_side = per_side();
    let covered = disks.pixels().iter().filter(|p| p.alpha() >= 128).count() as f64;
    let exact = (per_side * per_side) as f64 * std::f64::consts::PI * (RADIUS as f64).powi(2);
    if (covered - exact).abs() > 0.01 * exact {
        return Err(format!(
            "circles covered {covered} pixels, their area is {exact:.0}"
        ));
    }
    Ok(fold(art.data()) ^ covered as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_passes_and_missing_circles_are_caught() {
        let shapes = VectorRendering.prepare(1);
        let mut scratch = VectorRendering.scratch(&shapes);
        let sum = VectorRendering.round(&shapes, &mut scratch).unwrap();
        assert_ne!(
            VectorRendering.round(&VectorRendering.prepare(2), &mut scratch),
            Ok(sum)
        );
        let (art, disks) = &mut scratch;
        draw(&shapes, art, disks).unwrap();
        assert_eq!(check(art, disks), Ok(sum));
        // a band of 64 rows the rasteriser skipped: 16 of the 256 circles missing
        let row = 4 * SIZE as usize;
        disks.data_mut()[5 * 64 * row..6 * 64 * row].fill(0);
        assert!(check(art, disks).unwrap_err().contains("circles covered"));
        // the circles drawn at half their radius (a wrong transform)
        disks.fill(Color::TRANSPARENT);
        let per_side = per_side();
        let mut paint = Paint::default();
        paint.set_color_rgba8(0, 0, 0, 255);
        for i in 0..per_side * per_side {
            let (x, y) = (
                (i % per_side) as f32 * CELL + CELL / 2.0,
                (i / per_side) as f32 * CELL + CELL / 2.0,
            );
            let circle = PathBuilder::from_circle(x, y, RADIUS / 2.0).unwrap();
            disks.fill_path(
                &circle,
                &paint,
                FillRule::Winding,
                Transform::identity(),
                None,
            );
        }
        assert!(check(art, disks).is_err());
    }
}
