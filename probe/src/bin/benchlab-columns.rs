//! benchlab-columns: query results of a benchlab SQLite file, as binary columns (see `columns`).

use std::io::{self, BufWriter, Write};

use benchlab_probe::columns::{answer, serve, PROTOCOL};
use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 1 || args[0].starts_with('-') {
        eprintln!("usage: benchlab-columns DATABASE  (requests on stdin, one JSON line each)");
        std::process::exit(2)
    }
    let mut out = BufWriter::with_capacity(1 << 20, io::stdout().lock());
    let code = match serve(&args[0], &mut out) {
        Ok(()) => 0,
        Err(why) => {
            let _ = answer(&mut out, json!({"protocol": PROTOCOL, "error": why}));
            1
        }
    };
    let _ = out.flush();
    std::process::exit(code)
}
