//! The column reader behind `benchlab-columns`: query results of a benchlab SQLite file, as binary columns.
//!
//! Python's sqlite3 builds a tuple and a Python number for every value it returns: 0.4 s for
//! the 800,000 metric values of a 100,000-run report, most of loading it. This reader steps
//! the same statements in native code and sends each column as raw little-endian 8-byte
//! numbers, which numpy takes as they are (`benchlab.store.columnar`). It is a process of its
//! own, not a library loaded into Python: two copies of SQLite in one process release each
//! other's POSIX locks on a file they both open (sqlite.org/howtocorrupt.html, 2.2.1).
//!
//! Usage: `benchlab-columns DATABASE`; it opens the file (never creating it) and reads every
//! request in one read transaction, so that all the queries of a load see one committed state.
//! A request is a JSON line on stdin: `{"sql": "SELECT ...", "types": ["int" | "real", ...]}`,
//! a type per column. The answer is a JSON line on stdout, `{"protocol": 1, "rows": N}`,
//! followed by the columns in order, each N little-endian i64 ("int") or f64 ("real"); or
//! `{"protocol": 1, "error": "why"}`, after which the reader ends (exit 1). A value of
//! another kind (text, NULL, a real where integers belong) is such an error, never converted.
//! Answers come in the order asked, and a request may be sent before the answer before it is
//! read: it is stepped meanwhile (one answer waits in memory at most). It ends at the end of its input.

use std::io::{self, BufRead, Write};
use std::sync::mpsc;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Value};

/// Bumped whenever the request or the answer changes shape; benchlab refuses any other.
pub const PROTOCOL: u32 = 1;
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the reader stops: sent as the answer's `error` field, which benchlab shows as it is.
#[derive(Debug, thiserror::Error)]
pub enum ColumnsError {
    #[error("cannot open {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("cannot read a request: {0}")]
    Read(io::Error),
    #[error("a request that is no JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("a request without \"{0}\"")]
    Missing(&'static str),
    #[error("a column type {0} that is neither \"int\" nor \"real\"")]
    Type(Value),
    #[error("cannot prepare the query: {0}")]
    Prepare(rusqlite::Error),
    #[error("a statement that writes; this reader only reads")]
    Writes,
    #[error("the query has {found} columns, the request types {typed}")]
    Columns { found: usize, typed: usize },
    #[error("the stored column {name} holds {found} values where {wanted} belong")]
    Held {
        name: String,
        found: &'static str,
        wanted: &'static str,
    },
    #[error("cannot answer: {0}")]
    Answer(io::Error),
    /// SQLite failing on a statement it prepared (busy past the timeout, a damaged page).
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

#[derive(Clone, Copy)]
enum Kind {
    Int,
    Real,
}

impl Kind {
    fn parse(value: &Value) -> Result<Kind, ColumnsError> {
        match value.as_str() {
            Some("int") => Ok(Kind::Int),
            Some("real") => Ok(Kind::Real),
            _ => Err(ColumnsError::Type(value.clone())),
        }
    }

    fn plural(self) -> &'static str {
        match self {
            Kind::Int => "integers",
            Kind::Real => "numbers",
        }
    }
}

fn held(value: ValueRef<'_>) -> &'static str {
    match value {
        ValueRef::Null => "empty",
        ValueRef::Integer(_) => "integer",
        ValueRef::Real(_) => "real",
        ValueRef::Text(_) => "text",
        ValueRef::Blob(_) => "blob",
    }
}

/// A statement's row count and its columns, each of 8-byte little-endian numbers.
type Columns = (usize, Vec<Vec<u8>>);

/// One statement's rows as columns of 8-byte little-endian numbers.
fn query(conn: &Connection, sql: &str, kinds: &[Kind]) -> Result<Columns, ColumnsError> {
    let mut statement = conn.prepare(sql).map_err(ColumnsError::Prepare)?;
    if !statement.readonly() {
        return Err(ColumnsError::Writes);
    }
    if statement.column_count() != kinds.len() {
        return Err(ColumnsError::Columns {
            found: statement.column_count(),
            typed: kinds.len(),
        });
    }
    let names: Vec<String> = statement
        .column_names()
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut columns = vec![Vec::new(); kinds.len()];
    let mut count = 0;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        for (place, kind) in kinds.iter().enumerate() {
            let value = row.get_ref(place)?;
            let bytes = match (kind, value) {
                (Kind::Int, ValueRef::Integer(v)) => v.to_le_bytes(),
                (Kind::Real, ValueRef::Real(v)) => v.to_le_bytes(),
                (Kind::Real, ValueRef::Integer(v)) => (v as f64).to_le_bytes(),
                (_, other) => {
                    return Err(ColumnsError::Held {
                        name: names[place].clone(),
                        found: held(other),
                        wanted: kind.plural(),
                    });
                }
            };
            columns[place].extend_from_slice(&bytes);
        }
        count += 1;
    }
    Ok((count, columns))
}

pub fn answer(out: &mut impl Write, header: Value) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &header)?;
    out.write_all(b"\n")
}

pub fn serve(path: &str, out: &mut impl Write) -> Result<(), ColumnsError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX; // no CREATE: a missing file is an error
    let conn = Connection::open_with_flags(path, flags).map_err(|source| ColumnsError::Open {
        path: path.to_string(),
        source,
    })?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.execute_batch("BEGIN")?; // the first read fixes the snapshot for all
                                  // Requests are read and stepped on a thread of their own, answers written here: a query asked
                                  // before the last answer was read (benchlab asks for a load's metric values while it checks
                                  // its runs) is stepped while that answer waits in the pipe. One answer waits at most.
    let (answers, stepped) = mpsc::sync_channel::<Result<Columns, ColumnsError>>(1);
    std::thread::spawn(move || {
        for request in io::stdin().lock().lines() {
            let answer = match request
                .map_err(ColumnsError::Read)
                .and_then(|line| step(&conn, &line))
            {
                Ok(None) => continue, // a blank line
                Ok(Some(columns)) => Ok(columns),
                Err(why) => Err(why),
            };
            let failed = answer.is_err();
            if answers.send(answer).is_err() || failed {
                return; // the writer stopped, or this answer ends the reader
            }
        }
    }); // dropping the connection with the thread ends the read transaction
    for answer in stepped {
        let (rows, columns) = answer?;
        let sent = self::answer(out, json!({"protocol": PROTOCOL, "rows": rows}))
            .and_then(|_| columns.iter().try_for_each(|column| out.write_all(column)))
            .and_then(|_| out.flush());
        sent.map_err(ColumnsError::Answer)?;
    }
    Ok(())
}

/// One request line stepped: its rows as columns; None for a blank line, which asks nothing.
fn step(conn: &Connection, line: &str) -> Result<Option<Columns>, ColumnsError> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let request: Value = serde_json::from_str(line).map_err(ColumnsError::NotJson)?;
    let sql = request["sql"]
        .as_str()
        .ok_or(ColumnsError::Missing("sql"))?;
    let kinds = request["types"]
        .as_array()
        .ok_or(ColumnsError::Missing("types"))?
        .iter()
        .map(Kind::parse)
        .collect::<Result<Vec<_>, _>>()?;
    query(conn, sql, &kinds).map(Some)
}
