//! `cargo run --release -p troupe-lsp --example bench_lsp [LINES] [ROUNDS]`:
//! the latency of diagnostics after a change to a large file.

fn main() {
    let mut args = std::env::args().skip(1);
    let lines = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds = args.next().and_then(|a| a.parse().ok()).unwrap_or(21);
    println!("{}", troupe_lsp::bench::run(lines, rounds));
}
