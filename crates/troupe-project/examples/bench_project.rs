//! Times projection (and lowering to flat bytecode) of generated workflows:
//! `cargo run --release -p troupe-project --features testing --example bench_project`.

// A benchmark reads the clock; the crate's clippy.toml forbids it elsewhere.
#![allow(clippy::disallowed_methods)]

use std::time::Instant;
use troupe_project::project;
use troupe_project::testing::{count_stmts, generate_large};

fn main() {
    for statements in [10_000usize, 100_000, 1_000_000] {
        let t = Instant::now();
        let program = generate_large(statements, 50);
        let generated = t.elapsed();
        let w = &program.workflows[0];
        let stmts = count_stmts(&w.body);
        let t = Instant::now();
        let p = project(&program, w).expect("generated workflows project");
        let projected = t.elapsed();
        if std::env::var_os("ONLY_PROJECT").is_some() {
            println!("{stmts} statements: project {projected:.2?}");
            std::mem::forget(p);
            std::mem::forget(program);
            continue;
        }
        let t = Instant::now();
        let size = p.size();
        let flat = p.into_flat();
        let flattened = t.elapsed();
        let ops: usize = flat.iter().map(|f| f.ops.len()).sum();
        println!(
            "{stmts:>8} statements, 50 lifelines: generate {generated:>10.2?}, project {projected:>10.2?} \
             ({:.0} ns/stmt, size {}), into_flat {flattened:>10.2?} ({ops} ops)",
            projected.as_nanos() as f64 / stmts as f64,
            size,
        );
    }
}
