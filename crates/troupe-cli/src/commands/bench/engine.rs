//! In-memory benchmarks of the engine and checker: the counter loop,
//! `par` branches, online verification, checking and projection.

use super::*;

/// Nested loops whose erasure is ambiguous: without the decisions, B cannot
/// tell an inner iteration from an outer one.
pub(super) const NESTED_SOURCE: &str = r#"
workflow nested(n: Int @ A) {
  lifelines A, B
  act A: i = 0
  while i < n @ A {
    act A: j = 0
    while j < 2 @ A {
      msg A(j) -> B(x)
      act A: j = j + 1
    }
    act A: i = i + 1
  }
}
"#;

pub(super) fn bench_verify(rounds: i64) -> Result<ExitStatus> {
    use anyhow::Context;
    use troupe_check::Value;
    use troupe_msc::{Event, MemberOptions, Message, Semantics};
    use troupe_runtime::{EngineBuilder, RunOptions};
    let engine = EngineBuilder::from_source(NESTED_SOURCE)
        .map_err(|d| anyhow::anyhow!("{d:?}"))?
        .build()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcome = rt.block_on(engine.run(
        vec![Value::Int(rounds)],
        RunOptions {
            trace: true,
            ..RunOptions::default()
        },
    ))?;
    let mut trace = outcome.trace.context("no trace")?;
    // A non-member found only at the end: B's last receive claims another
    // statement, so every event before it is checked first.
    let last = trace
        .entries
        .iter_mut()
        .rev()
        .find(|e| {
            matches!(
                e.event,
                Event::Recv {
                    msg: Message::Data { .. },
                    ..
                }
            )
        })
        .context("no receive")?;
    if let Event::Recv {
        msg: Message::Data { stmt, .. },
        ..
    } = &mut last.event
    {
        stmt.0 += 1;
    }
    let events = trace.entries.len();
    let t = Instant::now();
    let online = engine.verify("bench", &trace);
    let online_time = t.elapsed();
    anyhow::ensure!(online.is_err(), "the monitor accepted a non-member");
    let semantics = Semantics::new(engine.program(), engine.workflow())?;
    let exec = trace.execution(engine.workflow().lifelines.len());
    let t = Instant::now();
    let offline = semantics.check(&exec.erase_control(), &MemberOptions::default());
    let offline_time = t.elapsed();
    anyhow::ensure!(offline.is_err(), "the offline check accepted a non-member");
    crate::outln!(
        "troupe bench verify: nested loops, {rounds} rounds, {events} events, the last one wrong"
    );
    crate::outln!(
        "  online monitor (control mode, what `troupe run` and `troupe verify` use)  {online_time:>10.2?}  rejected"
    );
    crate::outln!(
        "  offline membership of the erasure (the previous `verify`)                 {offline_time:>10.2?}  rejected"
    );
    Ok(ExitStatus::Success)
}

/// A deterministic workflow of about `statements` statements over `lifelines`
/// lifelines: messages, actions, and nested owned `if`s and `while`s.
pub fn generate_workflow(statements: usize, lifelines: usize) -> String {
    let lifelines = lifelines.max(2);
    let mut src = String::with_capacity(statements * 40);
    src.push_str(
        "pure step(n: Int) -> Int = n + 1\n\nworkflow generated(seed: Int @ L0) {\n  lifelines ",
    );
    let names: Vec<String> = (0..lifelines).map(|i| format!("L{i}")).collect();
    src.push_str(&names.join(", "));
    src.push('\n');
    // Give every lifeline a counter first.
    for i in 1..lifelines {
        let _ = writeln!(src, "  msg L0(seed) -> L{i}(n)");
    }
    src.push_str("  act L0: n = seed\n");
    let mut emitted = lifelines;
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut depth = 0usize;
    while emitted < statements {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let a = (state % lifelines as u64) as usize;
        let b = (a + 1 + (state >> 8) as usize % (lifelines - 1)) % lifelines;
        let indent = "  ".repeat(depth + 1);
        match (state >> 20) % 10 {
            0..=3 => {
                let _ = writeln!(src, "{indent}msg L{a}(n) -> L{b}(n)");
            }
            4..=6 => {
                let _ = writeln!(src, "{indent}act L{a}: n = step(n)");
            }
            7 if depth < 8 => {
                let _ = writeln!(src, "{indent}if n > {} @ L{a} {{", state % 100);
                depth += 1;
            }
            8 if depth < 8 => {
                let _ = writeln!(src, "{indent}while n < {} @ L{a} {{", state % 100);
                depth += 1;
            }
            _ if depth > 0 => {
                depth -= 1;
                let _ = writeln!(src, "{}}}", "  ".repeat(depth + 1));
            }
            _ => {
                let _ = writeln!(src, "{indent}act L{a}: n = n * 2");
            }
        }
        emitted += 1;
    }
    while depth > 0 {
        depth -= 1;
        let _ = writeln!(src, "{}}}", "  ".repeat(depth + 1));
    }
    src.push_str("  return n @ L0\n}\n");
    src
}

pub(super) fn bench_check(statements: usize, lifelines: usize, runs: usize) -> Result<ExitStatus> {
    let src = generate_workflow(statements, lifelines);
    let runs = runs.max(1);
    let mut parse_times = Vec::with_capacity(runs);
    let mut check_times = Vec::with_capacity(runs);
    let mut lex_times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let tokens = troupe_syntax::lexer::lex(&src, &mut Vec::new());
        lex_times.push(t.elapsed());
        std::hint::black_box(tokens);
        let t = Instant::now();
        let parsed = troupe_syntax::parse(&src);
        parse_times.push(t.elapsed());
        let t = Instant::now();
        let (program, diagnostics) = troupe_check::check(&parsed.file, &src);
        check_times.push(t.elapsed());
        anyhow::ensure!(
            program.is_some(),
            "the generated workflow does not check: {:?}",
            diagnostics.first()
        );
    }
    let stats = |v: &mut Vec<std::time::Duration>| {
        v.sort();
        (v[0], v[v.len() / 2])
    };
    let (lex_best, lex_median) = stats(&mut lex_times);
    let (parse_best, parse_median) = stats(&mut parse_times);
    let (check_best, check_median) = stats(&mut check_times);
    crate::outln!(
        "troupe bench check: {statements} statements, {lifelines} lifelines, {} bytes, {runs} runs",
        src.len()
    );
    crate::outln!(
        "  lex only (baseline)  best {:>9.2?}  median {:>9.2?}",
        lex_best,
        lex_median
    );
    crate::outln!(
        "  parse (incl. lex)    best {:>9.2?}  median {:>9.2?}",
        parse_best,
        parse_median
    );
    crate::outln!(
        "  check (after parse)  best {:>9.2?}  median {:>9.2?}",
        check_best,
        check_median
    );
    let total = parse_median + check_median;
    crate::outln!(
        "  parse + check        median {:>9.2?}  ({:.1} M statements/s, {:.1}x the lexer alone)",
        total,
        statements as f64 / total.as_secs_f64() / 1e6,
        total.as_secs_f64() / lex_median.as_secs_f64().max(1e-9)
    );
    Ok(ExitStatus::Success)
}

pub(super) fn bench_counter(rounds: i64, runs: usize) -> Result<ExitStatus> {
    use troupe_check::Value;
    use troupe_runtime::{EngineBuilder, RunOptions};
    let runs = runs.max(1);
    let engine = EngineBuilder::from_source(COUNTER_SOURCE)
        .map_err(|d| anyhow::anyhow!("examples/counter.troupe does not check: {d:?}"))?
        .build()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut plain, mut engine_times, mut user) = (Vec::new(), Vec::new(), Vec::new());
    let mut events = 0;
    let rss_before = resident_kib().0;
    for _ in 0..runs {
        plain.push(plain_ping_pong(&rt, rounds)?);
        let t = Instant::now();
        let options = RunOptions {
            trace: false,
            ..RunOptions::default()
        };
        let outcome = rt.block_on(engine.run(vec![Value::Int(rounds)], options))?;
        engine_times.push(t.elapsed());
        anyhow::ensure!(
            outcome.results[0].1 == Value::Int(rounds),
            "wrong result {:?}",
            outcome.results
        );
        let (elapsed, checked) = counter_through_run(rounds)?;
        user.push(elapsed);
        events = checked;
    }
    let rate = |d: std::time::Duration| rounds as f64 / d.as_secs_f64();
    let (plain, engine_time, user) = (median(plain), median(engine_times), median(user));
    crate::outln!("troupe bench counter: {rounds} rounds, {runs} runs (median)");
    crate::outln!(
        "  baseline: plain tokio ping-pong (current-thread, two spawned tasks, one mpsc channel each way)  {:>8.2?}  {:>10.0} rounds/s",
        plain,
        rate(plain)
    );
    crate::outln!(
        "  `troupe run` (verified online, {events} events checked)  {:>8.2?}  {:>10.0} rounds/s  {:.2}x the baseline; resident {} KiB before, peak {} KiB",
        user,
        rate(user),
        rate(user) / rate(plain),
        rss_before,
        resident_kib().1
    );
    crate::outln!(
        "  the engine alone (no journal, not verified)  {:>8.2?}  {:>10.0} rounds/s  {:.2}x the baseline; ZipperGen in memory ≈ 11,000 rounds/s ({:.0}x less than `troupe run`)",
        engine_time,
        rate(engine_time),
        rate(engine_time) / rate(plain),
        rate(user) / 11_000.0
    );
    Ok(ExitStatus::Success)
}

/// The plain ping-pong of `rounds` rounds on `rt`: its time.
pub(super) fn plain_ping_pong(
    rt: &tokio::runtime::Runtime,
    rounds: i64,
) -> Result<std::time::Duration> {
    let t = Instant::now();
    let got = rt.block_on(raw_ping_pong(rounds));
    let elapsed = t.elapsed();
    anyhow::ensure!(got == rounds, "the ping-pong counted {got}");
    Ok(elapsed)
}

/// The counter loop through the code of `troupe run` (`commands::run::
/// execute`: mock model, verified online, no trace kept): its time and the
/// events the monitor checked.
pub(super) fn counter_through_run(rounds: i64) -> Result<(std::time::Duration, u64)> {
    let (elapsed, events, _) = super::causal::through_run(COUNTER_SOURCE, rounds)?;
    Ok((elapsed, events))
}

/// `branches` counter loops in one `par`: all between Ping and Pong
/// (`shared`: each lifeline runs one part per branch), or each between a
/// pair of its own. The result is the sum of the counters.
pub fn par_counter_source(branches: usize, shared: bool) -> String {
    let mut s = String::from("workflow par_counter(limit: Int @ Ping) {\n  par {\n");
    for b in 0..branches {
        if b > 0 {
            s.push_str("  } and {\n");
        }
        let (ping, pong) = if shared {
            ("Ping".to_owned(), "Pong".to_owned())
        } else if b == 0 {
            ("Ping".to_owned(), "Pong0".to_owned())
        } else {
            (format!("Ping{b}"), format!("Pong{b}"))
        };
        if !shared && b > 0 {
            let _ = writeln!(s, "    msg Ping(limit) -> {ping}(limit{b})");
        }
        let limit = if !shared && b > 0 {
            format!("limit{b}")
        } else {
            "limit".to_owned()
        };
        let _ = writeln!(s, "    act {ping}: k{b} = 0");
        let _ = writeln!(s, "    while k{b} < {limit} @ {ping} {{");
        let _ = writeln!(s, "      msg {ping}(k{b}) -> {pong}(n{b})");
        let _ = writeln!(s, "      act {pong}: n{b} = n{b} + 1");
        let _ = writeln!(s, "      msg {pong}(n{b}) -> {ping}(k{b})");
        s.push_str("    }\n");
        if !shared && b > 0 {
            let _ = writeln!(s, "    msg {ping}(k{b}) -> Ping(k{b})");
        }
    }
    s.push_str("  }\n  act Ping: total = 0");
    for b in 0..branches {
        let _ = write!(s, " + k{b}");
    }
    s.push_str("\n  return total @ Ping\n}\n");
    s
}

pub(super) fn bench_par(rounds: i64, branches: usize, runs: usize) -> Result<ExitStatus> {
    use troupe_check::Value;
    use troupe_runtime::{EngineBuilder, RunOptions};
    let (runs, branches) = (runs.max(1), branches.max(1));
    let engine = |source: &str| -> Result<troupe_runtime::Engine> {
        Ok(EngineBuilder::from_source(source)
            .map_err(|d| anyhow::anyhow!("the benchmark workflow does not check: {d:?}"))?
            .build()?)
    };
    let single = engine(COUNTER_SOURCE)?;
    let shared = engine(&par_counter_source(branches, true))?;
    let pairs = engine(&par_counter_source(branches, false))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut times: [Vec<std::time::Duration>; 3] = Default::default();
    let mut cpu: [Vec<std::time::Duration>; 3] = Default::default();
    for _ in 0..runs {
        for (i, (e, total)) in [
            (&single, rounds),
            (&shared, rounds * branches as i64),
            (&pairs, rounds * branches as i64),
        ]
        .into_iter()
        .enumerate()
        {
            let options = RunOptions {
                trace: false,
                ..RunOptions::default()
            };
            let (t, c) = (Instant::now(), thread_cpu());
            let outcome = rt.block_on(e.run(vec![Value::Int(rounds)], options))?;
            times[i].push(t.elapsed());
            cpu[i].push(thread_cpu().saturating_sub(c));
            anyhow::ensure!(
                outcome.results[0].1 == Value::Int(total),
                "wrong result {:?}",
                outcome.results
            );
        }
    }
    let [one, sh, pa] = times.map(median);
    let [c_one, c_sh, c_pa] = cpu.map(median);
    let per = |d: std::time::Duration, n: i64| d.as_secs_f64() * 1e9 / n as f64;
    let total = rounds * branches as i64;
    crate::outln!(
        "troupe bench par: {branches} branches × {rounds} rounds, {runs} runs (median; trace off)"
    );
    crate::outln!(
        "  one counter loop (baseline)          {:>8.2?}  {:>7.0} ns/round  {:>12.0} rounds/s",
        one,
        per(one, rounds),
        rounds as f64 / one.as_secs_f64()
    );
    crate::outln!(
        "  par, {branches} loops on one pair (parts)  {:>8.2?}  {:>7.0} ns/round  {:>12.0} rounds/s",
        sh,
        per(sh, total),
        total as f64 / sh.as_secs_f64()
    );
    crate::outln!(
        "  par, {branches} loops on {branches} pairs         {:>8.2?}  {:>7.0} ns/round  {:>12.0} rounds/s",
        pa,
        per(pa, total),
        total as f64 / pa.as_secs_f64()
    );
    crate::outln!(
        "  per round against the single loop (wall): {:.2}x (one pair), {:.2}x ({branches} pairs); below 1 is faster",
        per(sh, total) / per(one, rounds),
        per(pa, total) / per(one, rounds)
    );
    if c_one > std::time::Duration::ZERO {
        // The run is one thread's work: its CPU time does not count the
        // time other processes of a loaded machine took.
        crate::outln!(
            "  CPU time of the run's thread: {:.0} / {:.0} / {:.0} ns per round; against the single loop {:.2}x (one pair), {:.2}x ({branches} pairs)",
            per(c_one, rounds),
            per(c_sh, total),
            per(c_pa, total),
            per(c_sh, total) / per(c_one, rounds),
            per(c_pa, total) / per(c_one, rounds)
        );
    }
    Ok(ExitStatus::Success)
}

pub(super) fn bench_project(lifelines: usize) -> Result<ExitStatus> {
    crate::outln!(
        "troupe bench project: generated workflows over {lifelines} lifelines (median of 3)"
    );
    crate::outln!(
        "  {:>10}  {:>12}  {:>12}  {:>14}  {:>12}",
        "statements",
        "check",
        "project",
        "ns/statement",
        "local size"
    );
    for statements in [10_000usize, 100_000, 1_000_000] {
        let src = generate_workflow(statements, lifelines);
        let (program, diagnostics) = troupe_check::check_text(&src);
        let program = program.ok_or_else(|| {
            anyhow::anyhow!(
                "generated workflow does not check: {:?}",
                diagnostics.first()
            )
        })?;
        let wf = &program.workflows[0];
        let mut check_times = Vec::new();
        let mut project_times = Vec::new();
        let mut size = 0;
        for _ in 0..3 {
            let t = Instant::now();
            std::hint::black_box(troupe_check::check_text(&src));
            check_times.push(t.elapsed());
            let t = Instant::now();
            let projection = troupe_project::project(&program, wf)?;
            project_times.push(t.elapsed());
            size = projection.size();
        }
        let (check, project) = (median(check_times), median(project_times));
        crate::outln!(
            "  {statements:>10}  {check:>12.2?}  {project:>12.2?}  {:>14.0}  {size:>12}",
            project.as_nanos() as f64 / statements as f64
        );
    }
    Ok(ExitStatus::Success)
}
