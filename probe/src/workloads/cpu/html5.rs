//! cpu.html5: a generated web page parsed by html5ever (Servo's HTML5 parser) into a DOM,
//! which is then walked. The page leaves paragraphs and list items unclosed and tables
//! without tbody, as real pages do, so the parser's tree-building rules do real work; the
//! walk checks the element counts the generator recorded, tbody elements the parser must
//! insert included.

use super::Task;
use html5ever::tendril::TendrilSink;
use html5ever::{parse_document, ParseOpts};
use markup5ever_rcdom::{Handle, NodeData, RcDom};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::collections::BTreeMap;
use std::fmt::Write;

pub struct Html5;

const SECTIONS: usize = 120;
const COUNTED: [&str; 8] = ["a", "li", "p", "table", "tbody", "td", "tr", "h2"];

pub struct Input {
    html: String,
    expected: BTreeMap<&'static str, usize>,
}

fn words(rng: &mut Pcg64, n: usize) -> String {
    const WORDS: [&str; 12] = [
        "lorem",
        "ipsum",
        "dolor",
        "&amp;",
        "sit",
        "amet",
        "&lt;tag&gt;",
        "route",
        "kernel",
        "page",
        "caf&eacute;",
        "cache",
    ];
    (0..n)
        .map(|_| WORDS[rng.random_range(0..WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn page(seed: u64) -> Input {
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut expected: BTreeMap<&'static str, usize> = COUNTED.iter().map(|t| (*t, 0)).collect();
    let mut html =
        String::from("<!DOCTYPE html><html><head><title>benchlab</title></head><body>\n");
    for s in 0..SECTIONS {
        let _ = write!(
            html,
            "<div class=\"section s{s}\" id=\"sec{s}\"><h2>{}</h2>\n",
            words(&mut rng, 4)
        );
        *expected.get_mut("h2").unwrap() += 1;
        for _ in 0..rng.random_range(2..6) {
            // paragraphs are left unclosed: the next <p> or block closes them
            let _ = write!(
                html,
                "<p>{} <a href=\"/page/{}\">{}</a> {}\n",
                words(&mut rng, 12),
                rng.random::<u16>(),
                words(&mut rng, 2),
                words(&mut rng, 8)
            );
            *expected.get_mut("p").unwrap() += 1;
            *expected.get_mut("a").unwrap() += 1;
        }
        html.push_str("<ul>");
        for _ in 0..rng.random_range(3..8) {
            let _ = write!(html, "<li><span>{}</span>", words(&mut rng, 5)); // unclosed <li>
            *expected.get_mut("li").unwrap() += 1;
        }
        html.push_str("</ul>\n<table>"); // no <tbody>: the parser inserts one
        *expected.get_mut("table").unwrap() += 1;
        *expected.get_mut("tbody").unwrap() += 1;
        let cols = rng.random_range(2..6);
        for _ in 0..rng.random_range(2..10) {
            html.push_str("<tr>");
            for _ in 0..cols {
                let _ = write!(html, "<td>{}", rng.random::<u32>()); // unclosed <td>
            }
            *expected.get_mut("tr").unwrap() += 1;
            *expected.get_mut("td").unwrap() += cols;
        }
        html.push_str("</table></div>\n");
    }
    html.push_str("</body></html>\n");
    Input { html, expected }
}

fn walk(node: &Handle, counts: &mut BTreeMap<&'static str, usize>, text: &mut usize) {
    match &node.data {
        NodeData::Element { name, .. } => {
            if let Some(tag) = COUNTED.iter().find(|t| **t == &*name.local) {
                *counts.entry(tag).or_default() += 1;
            }
        }
        NodeData::Text { contents } => *text += contents.borrow().len(),
        _ => {}
    }
    for child in node.children.borrow().iter() {
        walk(child, counts, text);
    }
}

impl Task for Html5 {
    type Input = Input;
    type Scratch = ();
    const NAME: &'static str = "cpu.html5";
    const SECTION: &'static str = "integer";
    const DESCRIPTION: &'static str = "html5ever parses a generated page with unclosed tags into a DOM and walks it (work: bytes of HTML)";
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 32;
    const WORK_UNIT: &'static str = "B";

    fn prepare(&self, seed: u64) -> Input {
        page(seed)
    }

    fn scratch(&self, _input: &Input) {}

    fn work(&self, input: &Input) -> f64 {
        input.html.len() as f64
    }

    fn round(&self, input: &Input, _: &mut ()) -> Result<u64, String> {
        let dom = parse(&input.html);
        check(input, &dom)
    }
}

fn parse(html: &str) -> RcDom {
    parse_document(RcDom::default(), ParseOpts::default()).one(html)
}

/// Walks the DOM: it must hold the elements the generator put in the page. Returns a
/// checksum of the element counts and the text's length.
fn check(input: &Input, dom: &RcDom) -> Result<u64, String> {
    let mut counts = BTreeMap::new();
    let mut text = 0;
    walk(&dom.document, &mut counts, &mut text);
    for (tag, want) in &input.expected {
        let got = counts.get(tag).copied().unwrap_or(0);
        if got != *want {
            return Err(format!(
                "the DOM has {got} <{tag}> elements, the page has {want}"
            ));
        }
    }
    Ok(counts
        .values()
        .fold(text as u64, |acc, &n| acc.rotate_left(9) ^ n as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn the_parser_inserts_tbody_and_a_missing_element_is_caught() {
        let input = page(1);
        assert!(Html5.round(&input, &mut ()).is_ok());
        assert_eq!(input.expected["tbody"], SECTIONS);
        assert!(!input.html.contains("<tbody"));
        let broken = Input {
            html: input.html.replacen("<td>", "", 1),
            expected: input.expected.clone(),
        };
        assert!(Html5.round(&broken, &mut ()).unwrap_err().contains("<td>"));
    }

    /// The first element named `tag` under `node` and its parent.
    fn find(node: &Handle, tag: &str) -> Option<(Handle, Handle)> {
        for child in node.children.borrow().iter() {
            if matches!(&child.data, NodeData::Element { name, .. } if &*name.local == tag) {
                return Some((node.clone(), child.clone()));
            }
            if let Some(found) = find(child, tag) {
                return Some(found);
            }
        }
        None
    }

    #[test]
    fn a_dom_that_lost_an_element_is_caught() {
        let input = page(1);
        let sum = Html5.round(&input, &mut ()).unwrap();
        assert_ne!(Html5.round(&page(2), &mut ()), Ok(sum));
        let dom = parse(&input.html);
        assert_eq!(check(&input, &dom), Ok(sum));
        // a cell dropped from the tree
        let (row, cell) = find(&dom.document, "td").unwrap();
        row.children.borrow_mut().retain(|c| !Rc::ptr_eq(c, &cell));
        assert!(check(&input, &dom).unwrap_err().contains("<td>"));
        // the implied tbody not inserted: its rows hung on the table itself
        let dom = parse(&input.html);
        let (table, tbody) = find(&dom.document, "tbody").unwrap();
        let rows = std::mem::take(&mut *tbody.children.borrow_mut());
        *table.children.borrow_mut() = rows;
        assert!(check(&input, &dom).unwrap_err().contains("<tbody>"));
    }
}
