//! cpu.sqlite: a real SQLite (bundled through rusqlite) in memory: bulk inserts in a
//! transaction, an index, indexed point lookups, and a join with grouping. Every answer
//! is compared with the same sums kept in Rust while the rows were generated.

use super::Task;
use crate::workload::{failed, WorkloadError};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use rusqlite::{params, Connection};

pub struct Sqlite;

const CUSTOMERS: usize = 5_000;
const ORDERS: usize = 30_000;
const LOOKUPS: usize = 2_000;
const CITIES: usize = 40;

pub struct Input {
    orders: Vec<(i64, i64, i64)>, // (customer, amount in cents, day)
    names: Vec<String>,
    per_customer: Vec<i64>,
    per_city: Vec<(i64, i64)>, // (orders, amount)
    lookups: Vec<usize>,
}

fn check(ok: bool, what: &str) -> Result<(), WorkloadError> {
    if ok {
        Ok(())
    } else {
        Err(failed!("SQLite returned a wrong {what}"))
    }
}

impl Task for Sqlite {
    type Input = Input;
    type Scratch = ();
    const NAME: &'static str = "cpu.sqlite";
    const SECTION: &'static str = "integer";
    const DESCRIPTION: &'static str =
        "in-memory SQLite: 35,000 inserts, an index, 2,000 indexed lookups, a grouped join (work: statements)";
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 6;
    const WORK_UNIT: &'static str = "statements";

    fn prepare(&self, seed: u64) -> Input {
        let mut rng = Pcg64::seed_from_u64(seed);
        let names = (0..CUSTOMERS)
            .map(|i| format!("customer-{i:05}-{:x}", rng.random::<u32>()))
            .collect();
        let mut per_customer = vec![0i64; CUSTOMERS];
        let mut per_city = vec![(0i64, 0i64); CITIES];
        let orders = (0..ORDERS)
            .map(|_| {
                let customer = rng.random_range(0..CUSTOMERS);
                let amount = rng.random_range(100..100_000i64);
                per_customer[customer] += amount;
                per_city[customer % CITIES].0 += 1;
                per_city[customer % CITIES].1 += amount;
                (customer as i64, amount, rng.random_range(0..365i64))
            })
            .collect();
        let lookups = (0..LOOKUPS)
            .map(|_| rng.random_range(0..CUSTOMERS))
            .collect();
        Input {
            orders,
            names,
            per_customer,
            per_city,
            lookups,
        }
    }

    fn scratch(&self, _input: &Input) {}

    fn work(&self, _input: &Input) -> f64 {
        (CUSTOMERS + ORDERS + LOOKUPS + 1) as f64
    }

    fn round(&self, input: &Input, _: &mut ()) -> Result<u64, WorkloadError> {
        let answers = query(input)?;
        check_answers(input, &answers)
    }
}

/// What the database answered: each lookup's sum, then the grouped join's rows
/// (city, orders, amount).
struct Answers {
    totals: Vec<i64>,
    groups: Vec<(i64, i64, i64)>,
}

/// Loads the tables, builds the index and asks the lookups and the grouped join.
fn query(input: &Input) -> Result<Answers, WorkloadError> {
    let err = |e: rusqlite::Error| failed!("sqlite: {e}");
    let mut db = Connection::open_in_memory().map_err(err)?;
    db.execute_batch(
        "CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city INTEGER NOT NULL);
         CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER NOT NULL, amount INTEGER NOT NULL, day INTEGER NOT NULL);",
    )
    .map_err(err)?;
    let tx = db.transaction().map_err(err)?;
    {
        let mut add = tx
            .prepare("INSERT INTO customer (id, name, city) VALUES (?1, ?2, ?3)")
            .map_err(err)?;
        for (i, name) in input.names.iter().enumerate() {
            add.execute(params![i as i64, name, (i % CITIES) as i64])
                .map_err(err)?;
        }
        let mut add = tx
            .prepare("INSERT INTO orders (customer, amount, day) VALUES (?1, ?2, ?3)")
            .map_err(err)?;
        for (customer, amount, day) in &input.orders {
            add.execute(params![customer, amount, day]).map_err(err)?;
        }
    }
    tx.commit().map_err(err)?;
    db.execute_batch("CREATE INDEX orders_by_customer ON orders (customer)")
        .map_err(err)?;
    let mut totals = Vec::with_capacity(input.lookups.len());
    {
        let mut lookup = db
            .prepare_cached("SELECT coalesce(sum(amount), 0) FROM orders WHERE customer = ?1")
            .map_err(err)?;
        for &customer in &input.lookups {
            let total: i64 = lookup
                .query_row([customer as i64], |row| row.get(0))
                .map_err(err)?;
            totals.push(total);
        }
    }
    let mut grouped = db
        .prepare(
            "SELECT c.city, count(*), sum(o.amount) FROM orders o JOIN customer c ON c.id = o.customer
             GROUP BY c.city ORDER BY c.city",
        )
        .map_err(err)?;
    let rows = grouped
        .query_map([], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
            ))
        })
        .map_err(err)?;
    let mut groups = Vec::with_capacity(CITIES);
    for row in rows {
        groups.push(row.map_err(err)?);
    }
    Ok(Answers { totals, groups })
}

/// Compares every answer with the sums kept while the rows were generated; returns their
/// checksum.
fn check_answers(input: &Input, answers: &Answers) -> Result<u64, WorkloadError> {
    let mut checksum = 0u64;
    for (&customer, &total) in input.lookups.iter().zip(&answers.totals) {
        check(
            total == input.per_customer[customer],
            "sum of one customer's orders",
        )?;
        checksum = checksum.rotate_left(5) ^ total as u64;
    }
    check(
        answers.totals.len() == input.lookups.len(),
        "number of lookups",
    )?;
    for &(city, count, amount) in &answers.groups {
        check(
            input.per_city.get(city as usize) == Some(&(count, amount)),
            "grouped join",
        )?;
        checksum = checksum.rotate_left(7) ^ (count as u64).wrapping_mul(amount as u64);
    }
    check(answers.groups.len() == CITIES, "number of groups")?;
    Ok(checksum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_passes_and_a_wrong_answer_is_caught() {
        let input = Sqlite.prepare(1);
        let sum = Sqlite.round(&input, &mut ()).unwrap();
        assert_ne!(Sqlite.round(&Sqlite.prepare(2), &mut ()), Ok(sum));
        let mut answers = query(&input).unwrap();
        assert_eq!(check_answers(&input, &answers), Ok(sum));
        // one customer's sum off by a cent
        answers.totals[100] += 1;
        assert!(check_answers(&input, &answers)
            .unwrap_err()
            .to_string()
            .contains("one customer's orders"));
        answers.totals[100] -= 1;
        // the last lookup's answer missing
        let last = answers.totals.pop();
        assert!(check_answers(&input, &answers)
            .unwrap_err()
            .to_string()
            .contains("number of lookups"));
        answers.totals.extend(last);
        // an order lost from a city's group (its count and amount)
        let (_, count, amount) = &mut answers.groups[7];
        *count -= 1;
        *amount -= input.orders[0].1;
        assert!(check_answers(&input, &answers)
            .unwrap_err()
            .to_string()
            .contains("grouped join"));
        // a whole city's group missing
        let mut answers = query(&input).unwrap();
        answers.groups.remove(12);
        assert!(check_answers(&input, &answers)
            .unwrap_err()
            .to_string()
            .contains("number of groups"));
    }
}
