//! cpu.html5: a generated web page parsed by html5ever (Servo's HTML5 parser) into a DOM,
//! which is then walked. The page leaves paragraphs and list items unclosed and tables
//! without tbody, as real pages do, so the parser's tree-building rules do real work; the
//! walk checks what the generator recorded: the element counts, tbody elements the parser
//! must insert included; the tree's shape (how many of each element sit under which parent
//! at which depth, so each td under a tr under the implied tbody, each a in its p); every
//! table's rows and columns in document order; and the text in document order (its length
//! and a hash of it, entities decoded, against the page with its tags stripped).

use super::Task;
use crate::workload::{failed, WorkloadError};
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
    /// How many elements of each (name, parent's name, depth) the page holds.
    shape: BTreeMap<Place, usize>,
    /// Each table's rows and columns, in document order.
    tables: Vec<(usize, usize)>,
    /// The text in document order: its length in bytes and its hash.
    text: (usize, u64),
}

/// An element's name, its parent's name and its depth (the document is at 0).
type Place = (&'static str, &'static str, usize);

const NAMES: [&str; 15] = [
    "html", "head", "title", "body", "div", "h2", "p", "a", "ul", "li", "span", "table", "tbody",
    "tr", "td",
];

fn known(name: &str) -> &'static str {
    NAMES.iter().find(|n| **n == name).copied().unwrap_or("?")
}

/// FNV-1a over bytes, so that the hash of a text does not depend on how it is split.
fn hash(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
const FNV: u64 = 0xcbf2_9ce4_8422_2325;

/// The page's text as a browser shows it: tags stripped, the generator's entities decoded.
fn text_of(html: &str) -> (usize, u64) {
    let (mut text, mut rest) = (String::new(), html);
    while let Some(open) = rest.find('<') {
        text.push_str(&rest[..open]);
        rest = &rest[open + rest[open..].find('>').expect("a closed tag") + 1..];
    }
    text.push_str(rest);
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&eacute;", "\u{e9}")
        .replace("&amp;", "&");
    (text.len(), hash(FNV, text.as_bytes()))
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
    let mut tables = Vec::new();
    let mut html =
        String::from("<!DOCTYPE html><html><head><title>benchlab</title></head><body>\n");
    for s in 0..SECTIONS {
        let _ = writeln!(
            html,
            "<div class=\"section s{s}\" id=\"sec{s}\"><h2>{}</h2>",
            words(&mut rng, 4)
        );
        *expected.get_mut("h2").unwrap() += 1;
        for _ in 0..rng.random_range(2..6) {
            // paragraphs are left unclosed: the next <p> or block closes them
            let _ = writeln!(
                html,
                "<p>{} <a href=\"/page/{}\">{}</a> {}",
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
        let rows = rng.random_range(2..10);
        tables.push((rows, cols));
        for _ in 0..rows {
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
    let mut shape = BTreeMap::new();
    let mut place = |name: &'static str, parent: &'static str, depth: usize, n: usize| {
        *shape.entry((name, parent, depth)).or_insert(0) += n;
    };
    for (name, parent, depth) in [
        ("html", "#document", 1),
        ("head", "html", 2),
        ("title", "head", 3),
        ("body", "html", 2),
    ] {
        place(name, parent, depth, 1);
    }
    let e = |t: &str| expected[t];
    place("div", "body", 3, SECTIONS);
    place("h2", "div", 4, e("h2"));
    place("p", "div", 4, e("p"));
    place("a", "p", 5, e("a"));
    place("ul", "div", 4, SECTIONS);
    place("li", "ul", 5, e("li"));
    place("span", "li", 6, e("li"));
    place("table", "div", 4, e("table"));
    place("tbody", "table", 5, e("tbody"));
    place("tr", "tbody", 6, e("tr"));
    place("td", "tr", 7, e("td"));
    let text = text_of(&html);
    Input {
        html,
        expected,
        shape,
        tables,
        text,
    }
}

/// What the walk saw.
#[derive(Default)]
struct Seen {
    counts: BTreeMap<&'static str, usize>,
    shape: BTreeMap<Place, usize>,
    tables: Vec<(usize, usize)>,
    text: (usize, u64),
}

fn walk(node: &Handle, parent: &'static str, depth: usize, seen: &mut Seen) {
    let mut me = parent;
    match &node.data {
        NodeData::Element { name, .. } => {
            if let Some(tag) = COUNTED.iter().find(|t| **t == &*name.local) {
                *seen.counts.entry(tag).or_default() += 1;
            }
            me = known(&name.local);
            *seen.shape.entry((me, parent, depth)).or_default() += 1;
            if me == "table" {
                seen.tables.push(table_size(node));
            }
        }
        NodeData::Document => me = "#document",
        NodeData::Text { contents } => {
            let contents = contents.borrow();
            seen.text.0 += contents.len();
            seen.text.1 = hash(seen.text.1, contents.as_bytes());
        }
        _ => {}
    }
    for child in node.children.borrow().iter() {
        walk(child, me, depth + 1, seen);
    }
}

/// A table's rows (the tr elements under its bodies) and columns (the td elements of its
/// first row; usize::MAX where the rows differ).
fn table_size(table: &Handle) -> (usize, usize) {
    let is = |node: &Handle, tag: &str| matches!(&node.data, NodeData::Element { name, .. } if &*name.local == tag);
    let (mut rows, mut cols) = (0, None);
    for body in table.children.borrow().iter().filter(|c| is(c, "tbody")) {
        for row in body.children.borrow().iter().filter(|c| is(c, "tr")) {
            rows += 1;
            let n = row.children.borrow().iter().filter(|c| is(c, "td")).count();
            if *cols.get_or_insert(n) != n {
                cols = Some(usize::MAX);
            }
        }
    }
    (rows, cols.unwrap_or(0))
}

impl Task for Html5 {
    type Input = Input;
    type Scratch = ();
    const NAME: &'static str = "cpu.html5";
    const SECTION: &'static str = "integer";
    const DESCRIPTION: &'static str = "html5ever parses a generated page with unclosed tags into a DOM and walks it (work: bytes of HTML)";
    const VERSION: u32 = 2;
    const ITERATIONS: u64 = 32;
    const WORK_UNIT: &'static str = "B";

    fn prepare(&self, seed: u64) -> Input {
        page(seed)
    }

    fn scratch(&self, _input: &Input) {}

    fn work(&self, input: &Input) -> f64 {
        input.html.len() as f64
    }

    fn round(&self, input: &Input, _: &mut ()) -> Result<u64, WorkloadError> {
        let dom = parse(&input.html);
        check(input, &dom)
    }
}

fn parse(html: &str) -> RcDom {
    parse_document(RcDom::default(), ParseOpts::default()).one(html)
}

/// Walks the DOM: it must hold the elements the generator put in the page, in the shape it
/// built (parents and depths), every table with its rows and columns, and the page's text in
/// document order. Returns a checksum of the element counts and the text's length and hash.
fn check(input: &Input, dom: &RcDom) -> Result<u64, WorkloadError> {
    let mut seen = Seen {
        text: (0, FNV),
        ..Seen::default()
    };
    walk(&dom.document, "", 0, &mut seen);
    let counts = &seen.counts;
    for (tag, want) in &input.expected {
        let got = counts.get(tag).copied().unwrap_or(0);
        if got != *want {
            return Err(failed!(
                "the DOM has {got} <{tag}> elements, the page has {want}"
            ));
        }
    }
    if seen.shape != input.shape {
        let (name, parent, depth) = input
            .shape
            .iter()
            .find(|(k, n)| seen.shape.get(*k) != Some(*n))
            .map(|(k, _)| *k)
            .or_else(|| {
                seen.shape
                    .keys()
                    .find(|k| !input.shape.contains_key(*k))
                    .copied()
            })
            .unwrap_or(("?", "?", 0));
        return Err(failed!(
            "the tree's shape differs: {} <{name}> under <{parent}> at depth {depth}, the page has {}",
            seen.shape.get(&(name, parent, depth)).copied().unwrap_or(0),
            input.shape.get(&(name, parent, depth)).copied().unwrap_or(0)
        ));
    }
    if let Some(t) = (0..input.tables.len().max(seen.tables.len()))
        .find(|t| seen.tables.get(*t) != input.tables.get(*t))
    {
        return Err(failed!(
            "table {t} has rows and columns {:?}, the page {:?}",
            seen.tables.get(t),
            input.tables.get(t)
        ));
    }
    if seen.text != input.text {
        return Err(failed!(
            "the text differs: {} bytes (hash {:016x}), the page has {} (hash {:016x})",
            seen.text.0,
            seen.text.1,
            input.text.0,
            input.text.1
        ));
    }
    Ok(counts
        .values()
        .fold(seen.text.1 ^ seen.text.0 as u64, |acc, &n| {
            acc.rotate_left(9) ^ n as u64
        }))
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
            ..page(1)
        };
        assert!(Html5
            .round(&broken, &mut ())
            .unwrap_err()
            .to_string()
            .contains("<td>"));
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
        assert!(check(&input, &dom)
            .unwrap_err()
            .to_string()
            .contains("<td>"));
        // the implied tbody not inserted: its rows hung on the table itself
        let dom = parse(&input.html);
        let (table, tbody) = find(&dom.document, "tbody").unwrap();
        let rows = std::mem::take(&mut *tbody.children.borrow_mut());
        *table.children.borrow_mut() = rows;
        assert!(check(&input, &dom)
            .unwrap_err()
            .to_string()
            .contains("<tbody>"));
    }

    /// Every node of `node`'s subtree, in document order.
    fn nodes(node: &Handle, all: &mut Vec<Handle>) {
        all.push(node.clone());
        for child in node.children.borrow().iter() {
            nodes(child, all);
        }
    }

    fn element(node: &Handle, tag: &str) -> bool {
        matches!(&node.data, NodeData::Element { name, .. } if &*name.local == tag)
    }

    #[test]
    fn a_dom_of_the_wrong_shape_or_text_is_caught() {
        let input = page(3);
        let sum = Html5.round(&input, &mut ()).unwrap();
        let caught = |change: &dyn Fn(&RcDom), what: &str| {
            let dom = parse(&input.html);
            assert_eq!(check(&input, &dom), Ok(sum));
            change(&dom);
            let err = check(&input, &dom).unwrap_err();
            assert!(err.to_string().contains(what), "{err}");
        };
        // one text emptied (a cell's number)
        caught(
            &|dom| {
                let (_, cell) = find(&dom.document, "td").unwrap();
                let text = cell.children.borrow()[0].clone();
                if let NodeData::Text { contents } = &text.data {
                    contents.borrow_mut().clear();
                }
            },
            "text differs",
        );
        // one word of text changed, its length kept
        caught(
            &|dom| {
                let (_, h2) = find(&dom.document, "h2").unwrap();
                let text = h2.children.borrow()[0].clone();
                if let NodeData::Text { contents } = &text.data {
                    let mut t = contents.borrow_mut();
                    let swapped: String = t.chars().rev().collect();
                    *t = swapped.as_str().into();
                }
            },
            "text differs",
        );
        // the tree flattened: every element's children hung on the body, in order
        caught(
            &|dom| {
                let (_, body) = find(&dom.document, "body").unwrap();
                let mut all = Vec::new();
                nodes(&body, &mut all);
                for n in &all {
                    n.children.borrow_mut().clear();
                }
                *body.children.borrow_mut() = all[1..].to_vec();
            },
            "shape differs",
        );
        // the cells of one row hung on the tbody beside the rows
        caught(
            &|dom| {
                let (tbody, row) = find(&dom.document, "tr").unwrap();
                let cells = std::mem::take(&mut *row.children.borrow_mut());
                tbody.children.borrow_mut().extend(cells);
            },
            "shape differs",
        );
        // a cell moved from the first row to the second (counts and shape kept)
        caught(
            &|dom| {
                let (tbody, _) = find(&dom.document, "tr").unwrap();
                let rows: Vec<Handle> = tbody
                    .children
                    .borrow()
                    .iter()
                    .filter(|c| element(c, "tr"))
                    .cloned()
                    .collect();
                let cell = rows[0].children.borrow_mut().pop().unwrap();
                rows[1].children.borrow_mut().push(cell);
            },
            "table 0",
        );
        // two sections' tables swapped (of different sizes)
        caught(
            &|dom| {
                let mut all = Vec::new();
                nodes(&dom.document, &mut all);
                let divs: Vec<Handle> = all.into_iter().filter(|n| element(n, "div")).collect();
                let table = |d: &Handle| {
                    d.children
                        .borrow()
                        .iter()
                        .position(|c| element(c, "table"))
                        .unwrap()
                };
                let k = (1..SECTIONS)
                    .find(|k| input.tables[*k] != input.tables[0])
                    .unwrap();
                let (i, j) = (table(&divs[0]), table(&divs[k]));
                let a = divs[0].children.borrow()[i].clone();
                let b = std::mem::replace(&mut divs[k].children.borrow_mut()[j], a);
                divs[0].children.borrow_mut()[i] = b;
            },
            "table 0",
        );
    }
}
