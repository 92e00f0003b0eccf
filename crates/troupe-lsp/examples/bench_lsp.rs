//! `cargo run --release -p troupe-lsp --example bench_lsp [LINES] [ROUNDS]`:
//! the latency of diagnostics after a change to a large file.

fn main() {
    let mut args = std::env::args().skip(1);
    let lines = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds = args.next().and_then(|a| a.parse().ok()).unwrap_or(21);
    println!("{}", troupe_lsp::bench::run(lines, rounds));
    if let Some((median, worst)) = troupe_lsp::bench::run_protocol(lines, rounds) {
        println!(
            "  through the server loop (didChange frame → publishDiagnostics frame): median {:.2} ms, worst {:.2} ms",
            median.as_secs_f64() * 1e3,
            worst.as_secs_f64() * 1e3
        );
    }
    // The train booking example calls MCP tools with contract sidecars.
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    if let Ok(text) = std::fs::read_to_string(examples.join("train_booking.troupe")) {
        println!(
            "{}",
            troupe_lsp::bench::run_contracts(&text, &examples, rounds)
        );
    }
}
