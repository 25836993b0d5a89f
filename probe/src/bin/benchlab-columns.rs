//! benchlab-columns: query results of a benchlab SQLite file, as binary columns (see `columns`).

use std::io::{self, BufWriter, Write};

use benchlab_probe::columns::{answer, serve, PROTOCOL};
use clap::{Arg, Command};
use serde_json::json;

fn main() {
    let matches = Command::new("benchlab-columns")
        .version(env!("CARGO_PKG_VERSION"))
        .about("reads a benchlab SQLite file's results as binary columns; requests on stdin, one JSON line each")
        .arg(Arg::new("database").value_name("DATABASE").required(true).help("the SQLite file (never created)"))
        .get_matches();
    let database: &String = matches.get_one("database").expect("required");
    let mut out = BufWriter::with_capacity(1 << 20, io::stdout().lock());
    let code = match serve(database, &mut out) {
        Ok(()) => 0,
        Err(why) => {
            let _ = answer(
                &mut out,
                json!({"protocol": PROTOCOL, "error": why.to_string()}),
            );
            1
        }
    };
    let _ = out.flush();
    std::process::exit(code)
}
