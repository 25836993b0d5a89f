//! cpu.text_rendering: Geekbench 5's Text Rendering workload, which shapes paragraphs of
//! text and renders them to a bitmap. Eight generated paragraphs of 90 words each (720 words,
//! about 3,800 characters, rich in kerning pairs such as "AV", "To", "Wa" and in "fi", "fl",
//! "ff" ligatures) are set in Ubuntu Light at 18 px into a 1024 px wide 8-bit grey bitmap,
//! each paragraph in its own band.
//!
//! Libraries: the font is Ubuntu Light as shipped inside the `epaint_default_fonts` crate
//! (egui's built-in fonts, Ubuntu Font Licence), compiled into the binary; rustybuzz (a port
//! of HarfBuzz) shapes each paragraph with the font's own GSUB ligatures and GPOS kerning;
//! ab_glyph rasterises every glyph's outline at its subpixel position into exact-area
//! coverage. Written by hand: the greedy line breaking by shaped advances (a dozen lines;
//! no crate breaks shaped glyph runs without bringing its own layout engine and font
//! system), the compositing of coverage into the band, and the checks.
//!
//! Each paragraph verifies itself against what the generator and the font's tables say
//! independently of the shaper and the rasteriser: every character of the text is covered,
//! in order, by a glyph that is its cmap glyph (or by a ligature over at most three letters);
//! the number of lines is within one of a greedy breaking by the font's hmtx advances without
//! kerning; each line's ink (the sum of coverage over its rows) equals the sum of the ink of
//! its glyphs as rasterised once each in `prepare` (a glyph atlas); and each line's inked box
//! lies within a pixel of where the margin, the baseline and the glyphs' bounds put it.

use super::{fold, Task};
use crate::workload::{failed, Digest, WorkloadError};
use ab_glyph::{point, Font, FontRef, GlyphId, PxScale};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use rustybuzz::{Direction, Face, ShapePlan, UnicodeBuffer};

pub struct TextRendering;

const WIDTH: usize = 1024;
const MARGIN: f32 = 24.0;
const MEASURE: f32 = WIDTH as f32 - 2.0 * MARGIN;
const PX_PER_EM: f32 = 18.0;
const PARAGRAPHS: usize = 8;
const WORDS: usize = 90;

/// Ordinary words, with the kerning pairs and ligatures that make shaping matter.
const VOCABULARY: &[&str] = &[
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be",
    "by", "on", "not", "this", "are", "or", "from", "at", "which", "but", "have", "an", "they",
    "you", "were", "there", "would", "their", "we", "been", "has", "when", "who", "will", "more",
    "if", "out", "so", "said", "what", "up", "about", "into", "than", "them", "can", "only",
    "other", "new", "some", "could", "time", "these", "two", "may", "then", "first", "any", "now",
    "such", "like", "over", "even", "most", "made", "after", "also", "many", "before", "must",
    "through", "back", "years", "where", "much", "way", "well", "down", "each", "just", "people",
    "how", "little", "state", "good", "very", "make", "world", "still", "own", "see", "work",
    "long", "here", "between", "both", "life", "being", "under", "never", "day", "same", "another",
    "know", "while", "last", "might", "great", "old", "year", "off", "come", "since", "against",
    "right", "used", "take", "three", "office", "official", "affair", "effect", "staff", "fluffy",
    "offer", "fifty", "flight", "flow", "fly", "fjord", "find", "field", "waffle", "baffled",
    "shuffle", "fiction", "reflect", "AVAST", "Wave", "Yacht", "Type", "Tower", "Vault", "LAVA",
    "Volt", "Favour", "Paw", "avoid", "wavy", "vertex", "youth", "keyword", "Tokyo", "Yves",
    "AT&T", "P.O.", "WAVY", "VAT", "Ty", "Wy", "Fe", "Kyoto", "LT", "TV", "y'all", "1984", "42%",
    "7.25", "(sic)",
];

pub struct Paragraph {
    text: String,
    /// Lines a greedy breaking by hmtx advances (no kerning, no ligatures) gives.
    nominal_lines: usize,
}

/// A glyph as rasterised once in `prepare`, at the origin: its ink and its exact bounds in
/// pixels relative to the pen on the baseline (y down).
#[derive(Clone, Copy, Default)]
struct Reference {
    ink: f64,
    left: f32,
    right: f32,
    top: f32,
    bottom: f32,
}

pub struct Input {
    face: Face<'static>,
    font: FontRef<'static>,
    plan: ShapePlan,
    paragraphs: Vec<Paragraph>,
    atlas: Vec<Reference>,
    /// Nominal glyph (cmap) of each ASCII character.
    cmap: [u16; 128],
    /// Pixels per font unit; ab_glyph's scale for the same size.
    scale: f32,
    px_scale: PxScale,
    ascent: usize,
    line_height: usize,
}

/// A glyph set on a line: its pen position (x in pixels from the band's left, y offset from
/// the baseline) and the text index its cluster starts at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placed {
    glyph: u16,
    cluster: u32,
    x: f32,
    dy: f32,
}

#[derive(Default)]
pub struct Layout {
    glyphs: Vec<Placed>,
    /// Per line: the range of `glyphs` it holds and its advance width in font units.
    lines: Vec<(std::ops::Range<usize>, i32)>,
}

pub struct Scratch {
    buffer: Option<UnicodeBuffer>,
    layout: Layout,
    band: Vec<u8>,
}

fn generate(rng: &mut Pcg64) -> String {
    let mut words = Vec::with_capacity(WORDS);
    let mut sentence_start = true;
    for i in 0..WORDS {
        let mut word = VOCABULARY.choose(rng).expect("a word").to_string();
        if sentence_start {
            let mut chars = word.chars();
            let first = chars.next().expect("a letter").to_ascii_uppercase();
            word = std::iter::once(first).chain(chars).collect();
        }
        sentence_start = false;
        if i + 1 == WORDS || rng.random_bool(0.12) {
            word.push('.');
            sentence_start = true;
        } else if rng.random_bool(0.08) {
            word.push(',');
        }
        words.push(word);
    }
    words.join(" ")
}

/// Greedy line breaking of `text` by the font's nominal advances (hmtx, no kerning).
fn nominal_lines(text: &str, advance: &[i32; 128], scale: f32) -> usize {
    let width = |w: &str| w.bytes().map(|b| advance[b as usize]).sum::<i32>();
    let (mut lines, mut line) = (0, -1i32);
    for word in text.split(' ') {
        let w = width(word);
        if line >= 0 && (line + advance[b' ' as usize] + w) as f32 * scale <= MEASURE {
            line += advance[b' ' as usize] + w;
        } else {
            lines += 1;
            line = w;
        }
    }
    lines
}

/// How far a line's ink may stray from its glyphs' ink: each pixel's coverage is rounded to
/// 8 bits, which moved full lines (ink about 640,000) by at most 160 over 30 seeds; the
/// smallest glyph, a period, has 720.
fn ink_tolerance(want: f64) -> f64 {
    0.00025 * want + 100.0
}

impl TextRendering {
    /// Shapes paragraph `index` and breaks it into lines (the first half of a part).
    pub fn lay_out(&self, input: &Input, index: usize, scratch: &mut Scratch) {
        let text = &input.paragraphs[index].text;
        let mut buffer = scratch.buffer.take().unwrap_or_default();
        buffer.push_str(text);
        buffer.set_direction(Direction::LeftToRight);
        buffer.set_script(rustybuzz::script::LATIN);
        let shaped = rustybuzz::shape_with_plan(&input.face, &input.plan, buffer);
        let (infos, positions) = (shaped.glyph_infos(), shaped.glyph_positions());
        let bytes = text.as_bytes();
        let layout = &mut scratch.layout;
        layout.glyphs.clear();
        layout.lines.clear();
        let measure = (MEASURE / input.scale) as i32; // font units

        // Word by word: a space glyph, then a maximal run of glyphs whose clusters are not
        // spaces; a word that does not fit starts a new line and its space is dropped.
        let (mut line_start, mut line_width) = (0usize, 0i32);
        let mut i = 0;
        while i < infos.len() {
            let is_space = |k: usize| bytes[infos[k].cluster as usize] == b' ';
            let mut space = 0;
            let start = i;
            if is_space(i) {
                space = positions[i].x_advance;
                i += 1;
            }
            let word_start = i;
            let mut word = 0;
            while i < infos.len() && !is_space(i) {
                word += positions[i].x_advance;
                i += 1;
            }
            let first = layout.glyphs.len() == line_start;
            let (from, pen) = if first {
                (word_start, 0)
            } else if line_width + space + word <= measure {
                (start, line_width)
            } else {
                let end = layout.glyphs.len();
                layout.lines.push((line_start..end, line_width));
                line_start = end;
                (word_start, 0)
            };
            let mut pen = pen;
            for k in from..i {
                layout.glyphs.push(Placed {
                    glyph: infos[k].glyph_id as u16,
                    cluster: infos[k].cluster,
                    x: MARGIN + (pen + positions[k].x_offset) as f32 * input.scale,
                    dy: -(positions[k].y_offset as f32) * input.scale,
                });
                pen += positions[k].x_advance;
            }
            line_width = pen;
        }
        if layout.glyphs.len() > line_start {
            layout
                .lines
                .push((line_start..layout.glyphs.len(), line_width));
        }
        scratch.buffer = Some(shaped.clear());
    }

    /// Rasterises a laid-out paragraph into `band` (the second half of a part).
    pub fn render(&self, input: &Input, layout: &Layout, band: &mut Vec<u8>) {
        let height = layout.lines.len() * input.line_height;
        band.clear();
        band.resize(WIDTH * height, 0);
        for (k, (range, _)) in layout.lines.iter().enumerate() {
            let baseline = (k * input.line_height + input.ascent) as f32;
            for g in &layout.glyphs[range.clone()] {
                let glyph = GlyphId(g.glyph)
                    .with_scale_and_position(input.px_scale, point(g.x, baseline + g.dy));
                let Some(outlined) = input.font.outline_glyph(glyph) else {
                    continue; // a space
                };
                let bounds = outlined.px_bounds();
                let (x0, y0) = (bounds.min.x as i32, bounds.min.y as i32);
                outlined.draw(|dx, dy, c| {
                    let (x, y) = (x0 + dx as i32, y0 + dy as i32);
                    if (0..WIDTH as i32).contains(&x) && (0..height as i32).contains(&y) {
                        let p = &mut band[y as usize * WIDTH + x as usize];
                        *p = p.saturating_add((c * 255.0 + 0.5) as u8);
                    }
                });
            }
        }
    }

    /// Verifies a rendered paragraph against the text, the font's tables and the atlas.
    pub fn check(
        &self,
        input: &Input,
        index: usize,
        layout: &Layout,
        band: &[u8],
    ) -> Result<(), WorkloadError> {
        let paragraph = &input.paragraphs[index];
        let bytes = paragraph.text.as_bytes();
        let lines = layout.lines.len();
        if lines.abs_diff(paragraph.nominal_lines) > 1 {
            return Err(failed!(
                "paragraph {index} set in {lines} lines; its nominal advances give {}",
                paragraph.nominal_lines
            ));
        }
        // Every character covered, in order, by its own glyph or a short ligature.
        let mut next = 0usize;
        for (k, (range, width)) in layout.lines.iter().enumerate() {
            if *width as f32 * input.scale > MEASURE + 0.01 {
                return Err(failed!(
                    "line {k} of paragraph {index} overflows the measure"
                ));
            }
            for (j, i) in range.clone().enumerate() {
                let g = &layout.glyphs[i];
                let c = g.cluster as usize;
                if c < next {
                    return Err(failed!(
                        "paragraph {index}: a glyph for character {c} comes after character {next}"
                    ));
                }
                let skipped = &bytes[next..c];
                if !(skipped.is_empty() || (j == 0 && k > 0 && skipped == b" ")) {
                    return Err(failed!(
                        "paragraph {index}: character {next} ({:?}) has no glyph",
                        bytes.get(next).map(|b| *b as char)
                    ));
                }
                let end = layout
                    .glyphs
                    .get(i + 1)
                    .map_or(bytes.len(), |n| n.cluster as usize);
                let end = if bytes[c] == b' ' {
                    c + 1
                } else {
                    bytes[c..end.max(c)]
                        .iter()
                        .position(|b| *b == b' ')
                        .map_or(end, |p| c + p)
                };
                let nominal = input.cmap[bytes[c] as usize & 127];
                let ok = match end.saturating_sub(c) {
                    1 => g.glyph == nominal,
                    2 | 3 => {
                        g.glyph != nominal
                            && g.glyph != 0
                            && bytes[c..end].iter().all(u8::is_ascii_alphabetic)
                    }
                    _ => false,
                };
                if !ok {
                    return Err(failed!(
                        "paragraph {index}: glyph {} for {:?} is not what the font maps it to",
                        g.glyph,
                        String::from_utf8_lossy(&bytes[c..end.max(c)])
                    ));
                }
                next = end;
            }
        }
        if next != bytes.len() {
            return Err(failed!(
                "paragraph {index}: the text ends unset at character {next}"
            ));
        }
        // Each line's ink and inked box, against the atlas.
        for (k, (range, _)) in layout.lines.iter().enumerate() {
            let glyphs = &layout.glyphs[range.clone()];
            let rows = k * input.line_height..(k + 1) * input.line_height;
            let baseline = (k * input.line_height + input.ascent) as f32;
            let (mut want, mut left, mut right) = (0.0f64, f32::MAX, f32::MIN);
            let (mut top, mut bottom) = (f32::MAX, f32::MIN);
            for g in glyphs {
                let r = &input.atlas[g.glyph as usize];
                if r.ink > 0.0 {
                    want += r.ink;
                    left = left.min(g.x + r.left);
                    right = right.max(g.x + r.right);
                    top = top.min(baseline + g.dy + r.top);
                    bottom = bottom.max(baseline + g.dy + r.bottom);
                }
            }
            let (mut ink, mut first_col, mut last_col) = (0u64, usize::MAX, 0usize);
            let (mut first_row, mut last_row) = (usize::MAX, 0usize);
            for y in rows {
                let row = &band[y * WIDTH..(y + 1) * WIDTH];
                let sum: u64 = row.iter().map(|v| *v as u64).sum();
                if sum == 0 {
                    continue;
                }
                ink += sum;
                first_row = first_row.min(y);
                last_row = y;
                first_col = first_col.min(row.iter().position(|v| *v > 0).unwrap_or(WIDTH));
                last_col = last_col.max(row.iter().rposition(|v| *v > 0).unwrap_or(0));
            }
            let tolerance = ink_tolerance(want);
            if (ink as f64 - want).abs() > tolerance {
                return Err(failed!(
                    "line {k} of paragraph {index} has ink {ink}; its glyphs have {want:.0}"
                ));
            }
            let near = |edge: usize, exact: f32| (edge as f32 - exact).abs() <= 1.0;
            let first_x = glyphs.first().map_or(MARGIN, |g| g.x);
            if first_x != MARGIN
                || !near(first_col, left)
                || !near(last_col + 1, right)
                || !near(first_row, top)
                || !near(last_row + 1, bottom)
            {
                return Err(failed!(
                    "line {k} of paragraph {index} is inked at x {first_col}..{}, y {first_row}..{}; \
                     its glyphs belong at x {left:.1}..{right:.1}, y {top:.1}..{bottom:.1}",
                    last_col + 1,
                    last_row + 1
                ));
            }
        }
        Ok(())
    }
}

impl Task for TextRendering {
    type Input = Input;
    type Scratch = Scratch;
    const NAME: &'static str = "cpu.text_rendering";
    const SECTION: &'static str = "integer";
    const DESCRIPTION: &'static str = "rustybuzz shaping and ab_glyph rasterising of 720 words in 8 paragraphs to a 1024 px wide bitmap (work: characters)";
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 30;
    const WORK_UNIT: &'static str = "characters";
    const PARTS: usize = PARAGRAPHS;

    fn prepare(&self, seed: u64) -> Input {
        let data = epaint_default_fonts::UBUNTU_LIGHT;
        let face = Face::from_slice(data, 0).expect("Ubuntu Light parses");
        let font = FontRef::try_from_slice(data).expect("Ubuntu Light parses");
        let plan = ShapePlan::new(
            &face,
            Direction::LeftToRight,
            Some(rustybuzz::script::LATIN),
            None,
            &[],
        );
        let upem = face.units_per_em() as f32;
        let scale = PX_PER_EM / upem;
        let px_scale = PxScale::from(PX_PER_EM * font.height_unscaled() / upem);
        let mut cmap = [0u16; 128];
        let mut advance = [0i32; 128];
        for b in 32u8..127 {
            let id = face.glyph_index(b as char).map_or(0, |g| g.0);
            cmap[b as usize] = id;
            advance[b as usize] = face
                .glyph_hor_advance(rustybuzz::ttf_parser::GlyphId(id))
                .unwrap_or(0) as i32;
        }
        let atlas = (0..face.number_of_glyphs())
            .map(|id| {
                let glyph = GlyphId(id).with_scale_and_position(px_scale, point(0.0, 0.0));
                let Some(outlined) = font.outline_glyph(glyph) else {
                    return Reference::default();
                };
                let mut ink = 0.0f64;
                outlined.draw(|_, _, c| ink += c as f64 * 255.0);
                let b = face
                    .glyph_bounding_box(rustybuzz::ttf_parser::GlyphId(id))
                    .expect("an outlined glyph has bounds");
                Reference {
                    ink,
                    left: b.x_min as f32 * scale,
                    right: b.x_max as f32 * scale,
                    top: -b.y_max as f32 * scale,
                    bottom: -b.y_min as f32 * scale,
                }
            })
            .collect();
        let ascent = (face.ascender() as f32 * scale).ceil() as usize;
        let line_height =
            ((face.ascender() - face.descender() + face.line_gap()) as f32 * scale).ceil() as usize;
        let mut rng = Pcg64::seed_from_u64(seed);
        let paragraphs = (0..PARAGRAPHS)
            .map(|_| {
                let text = generate(&mut rng);
                let nominal_lines = nominal_lines(&text, &advance, scale);
                Paragraph {
                    text,
                    nominal_lines,
                }
            })
            .collect();
        Input {
            face,
            font,
            plan,
            paragraphs,
            atlas,
            cmap,
            scale,
            px_scale,
            ascent,
            line_height,
        }
    }

    fn scratch(&self, input: &Input) -> Scratch {
        let most = input.paragraphs.iter().map(|p| p.nominal_lines).max();
        Scratch {
            buffer: Some(UnicodeBuffer::new()),
            layout: Layout::default(),
            band: Vec::with_capacity((most.unwrap_or(0) + 2) * input.line_height * WIDTH),
        }
    }

    fn work(&self, input: &Input) -> f64 {
        input.paragraphs.iter().map(|p| p.text.len()).sum::<usize>() as f64
    }

    fn part(
        &self,
        input: &Input,
        scratch: &mut Scratch,
        index: usize,
    ) -> Result<u64, WorkloadError> {
        self.lay_out(input, index, scratch);
        self.render(input, &scratch.layout, &mut scratch.band);
        self.check(input, index, &scratch.layout, &scratch.band)?;
        let mut digest = Digest::new();
        digest.word(fold(&scratch.band));
        digest.word(scratch.layout.lines.len() as u64);
        digest.word(scratch.layout.glyphs.len() as u64);
        Ok(digest.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paragraph 0 of seed 1, laid out and rendered.
    fn rendered(input: &Input) -> Scratch {
        let mut scratch = TextRendering.scratch(input);
        TextRendering.lay_out(input, 0, &mut scratch);
        TextRendering.render(input, &scratch.layout, &mut scratch.band);
        scratch
    }

    /// The layout without its glyph `index`.
    fn without(layout: &Layout, index: usize) -> Layout {
        let mut glyphs = layout.glyphs.clone();
        glyphs.remove(index);
        let shrink = |i: usize| if i > index { i - 1 } else { i };
        let lines = layout
            .lines
            .iter()
            .map(|(r, w)| (shrink(r.start)..shrink(r.end), *w))
            .collect();
        Layout { glyphs, lines }
    }

    fn period(input: &Input, layout: &Layout) -> usize {
        let bytes = input.paragraphs[0].text.as_bytes();
        let line = &layout.lines[0].0;
        (line.start + 1..line.end)
            .find(|&i| bytes[layout.glyphs[i].cluster as usize] == b'.')
            .expect("a period on the first line")
    }

    #[test]
    fn a_round_passes_and_its_checksum_is_the_seeds() {
        let input = TextRendering.prepare(1);
        let mut scratch = TextRendering.scratch(&input);
        let first = TextRendering.round(&input, &mut scratch).unwrap();
        assert_eq!(TextRendering.round(&input, &mut scratch).unwrap(), first);
        let other = TextRendering.prepare(2);
        let mut scratch = TextRendering.scratch(&other);
        assert_ne!(TextRendering.round(&other, &mut scratch).unwrap(), first);
    }

    #[test]
    fn the_shaper_kerns_and_makes_ligatures() {
        let input = TextRendering.prepare(1);
        let scratch = rendered(&input);
        let text = input.paragraphs[0].text.as_bytes();
        let layout = &scratch.layout;
        let dropped_spaces = layout.lines.len() - 1;
        // fewer glyphs than characters: ligatures (fi, fl, ff...)
        assert!(layout.glyphs.len() + dropped_spaces < text.len());
        // and some glyph is not where nominal advances put it: kerning
        let advance = |b: u8| {
            let id = rustybuzz::ttf_parser::GlyphId(input.cmap[b as usize]);
            input.face.glyph_hor_advance(id).unwrap() as f32 * input.scale
        };
        let mut kerned = 0;
        for w in layout.glyphs.windows(2) {
            let (a, b) = (w[0].cluster as usize, w[1].cluster as usize);
            if b == a + 1 && w[1].x > w[0].x && (w[1].x - w[0].x - advance(text[a])).abs() > 0.01 {
                kerned += 1;
            }
        }
        assert!(kerned > 0, "no pair was kerned");
    }

    #[test]
    fn a_glyph_dropped_by_the_layout_is_caught() {
        let input = TextRendering.prepare(1);
        let scratch = rendered(&input);
        let layout = without(&scratch.layout, 5);
        let mut band = Vec::new();
        TextRendering.render(&input, &layout, &mut band);
        let err = TextRendering.check(&input, 0, &layout, &band).unwrap_err();
        assert!(err.to_string().contains("has no glyph"), "{err}");
    }

    #[test]
    fn a_period_missing_from_the_bitmap_is_caught() {
        let input = TextRendering.prepare(1);
        let scratch = rendered(&input);
        assert!(TextRendering
            .check(&input, 0, &scratch.layout, &scratch.band)
            .is_ok());
        // the smallest glyph outweighs twice the tolerance of the fullest line
        let dot = input.atlas[input.cmap[b'.' as usize] as usize].ink;
        let fullest = (0..scratch.layout.lines.len())
            .map(|k| {
                let rows = k * input.line_height * WIDTH..(k + 1) * input.line_height * WIDTH;
                scratch.band[rows].iter().map(|v| *v as f64).sum::<f64>()
            })
            .fold(0.0, f64::max);
        assert!(dot > 2.0 * ink_tolerance(fullest), "{dot} {fullest}");
        let mut band = Vec::new();
        let layout = without(&scratch.layout, period(&input, &scratch.layout));
        TextRendering.render(&input, &layout, &mut band);
        let err = TextRendering
            .check(&input, 0, &scratch.layout, &band)
            .unwrap_err();
        assert!(err.to_string().contains("has ink"), "{err}");
    }

    #[test]
    fn a_wrong_glyph_is_caught() {
        let input = TextRendering.prepare(1);
        let mut scratch = rendered(&input);
        let text = input.paragraphs[0].text.as_bytes();
        let e = scratch
            .layout
            .glyphs
            .iter()
            .position(|g| text[g.cluster as usize] == b'e')
            .expect("an e");
        scratch.layout.glyphs[e].glyph = input.cmap[b'c' as usize];
        let err = TextRendering
            .check(&input, 0, &scratch.layout, &scratch.band)
            .unwrap_err();
        assert!(err.to_string().contains("not what the font maps"), "{err}");
    }

    #[test]
    fn a_shifted_line_is_caught() {
        let input = TextRendering.prepare(1);
        let scratch = rendered(&input);
        let rows = input.line_height..2 * input.line_height;
        // two pixels to the right
        let mut band = scratch.band.clone();
        for y in rows.clone() {
            band[y * WIDTH..(y + 1) * WIDTH].rotate_right(2);
        }
        let err = TextRendering
            .check(&input, 0, &scratch.layout, &band)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("line 1 of paragraph 0 is inked at"),
            "{err}"
        );
        // two pixels down
        let mut band = scratch.band.clone();
        for y in rows.rev() {
            let (above, below) = band.split_at_mut(y * WIDTH);
            below[..WIDTH].copy_from_slice(&above[(y - 2) * WIDTH..(y - 1) * WIDTH]);
        }
        let err = TextRendering
            .check(&input, 0, &scratch.layout, &band)
            .unwrap_err();
        assert!(err.to_string().contains("line 1 of paragraph 0"), "{err}");
    }
}
