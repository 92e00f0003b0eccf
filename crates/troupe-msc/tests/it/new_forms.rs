//! Theorem tests for the forms of LANGUAGE.md §6 that troupe implements:
//! `for` and `call` (with a callee that calls another), in random workflows
//! written as *source* and checked by the real front end.
//!
//! For each generated workflow, runs of the projection under random
//! schedules complete (no deadlock), their erasures are members of ⟦P⟧,
//! and — the independent oracle — what every lifeline receives (the values
//! of its data messages, in order) equals what a direct interpreter of the
//! generator's own model of the workflow computes: that interpreter knows
//! `for` as "the body once per element, in order" and `call` as "run the
//! callee with its lifelines renamed", not the checker's desugaring or
//! inlining. The seed varies per run (printed; `TROUPE_TEST_SEED` repeats one).

use troupe_check::Value;
use troupe_msc::{
    Decisions, Event, MemberOptions, Message, Monitor, Semantics, SimOptions, simulate,
};

/// The generator's model of a statement. Lifelines are indices; every
/// lifeline has an `Int` variable `n`; lifeline 0 has the list `xs` and
/// lifeline 1 the list `ys`.
#[derive(Debug, Clone)]
enum G {
    /// `msg X(n) -> Y(n)`
    Msg(usize, usize),
    /// `act X: n = n + k`
    Add(usize, i64),
    /// `for vD in (xs|ys) @ X { act X: n = n + vD; body }`, X ∈ {0, 1}.
    For(usize, Vec<G>),
    /// `if n > k @ X { then } else { otherwise }`
    If(usize, i64, Vec<G>, Vec<G>),
    /// `call step[P = X, Q = Y](n) -> n @ X` (or `twice`, which calls `step` twice)
    Call { twice: bool, p: usize, q: usize },
}

const LIBRARY: &str = r#"
workflow step(m: Int @ P) {
  lifelines P, Q
  msg P(m) -> Q(m)
  act Q: m = m + m + 1
  msg Q(m) -> P(r)
  return r @ P
}

workflow twice(k: Int @ P) {
  lifelines P, Q
  call step[P = P, Q = Q](k) -> k @ P
  call step[Q = Q, P = P](k + 1) -> k @ P
  return k @ P
}
"#;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

struct Gen {
    rng: Rng,
    lifelines: usize,
    left: usize,
    calls: usize,
}

impl Gen {
    fn block(&mut self, depth: usize, fors: usize) -> Vec<G> {
        let n = 1 + self.rng.below(3);
        let mut out = Vec::new();
        for _ in 0..n {
            if self.left == 0 {
                break;
            }
            self.left -= 1;
            let x = self.rng.below(self.lifelines);
            let y = (x + 1 + self.rng.below(self.lifelines - 1)) % self.lifelines;
            let g = match self.rng.below(if depth < 3 { 10 } else { 6 }) {
                0..=2 => G::Msg(x, y),
                3 => G::Add(x, self.rng.below(5) as i64 - 2),
                4 | 5 if self.calls < 4 => {
                    self.calls += 1;
                    G::Call {
                        twice: self.rng.below(3) == 0,
                        p: x,
                        q: y,
                    }
                }
                4 | 5 => G::Msg(x, y),
                6 | 7 if fors < 2 => G::For(self.rng.below(2), self.block(depth + 1, fors + 1)),
                _ => G::If(
                    x,
                    self.rng.below(7) as i64 - 3,
                    self.block(depth + 1, fors),
                    self.block(depth + 1, fors),
                ),
            };
            out.push(g);
        }
        out
    }
}

fn write(out: &mut String, block: &[G], indent: usize, depth: usize) {
    let pad = "  ".repeat(indent);
    for g in block {
        match g {
            G::Msg(x, y) => out.push_str(&format!("{pad}msg L{x}(n) -> L{y}(n)\n")),
            G::Add(x, k) => out.push_str(&format!("{pad}act L{x}: n = n + {k}\n")),
            G::For(x, body) => {
                let list = if *x == 0 { "xs" } else { "ys" };
                out.push_str(&format!("{pad}for v{depth} in {list} @ L{x} {{\n"));
                out.push_str(&format!("{pad}  act L{x}: n = n + v{depth}\n"));
                write(out, body, indent + 1, depth + 1);
                out.push_str(&format!("{pad}}}\n"));
            }
            G::If(x, k, then, otherwise) => {
                out.push_str(&format!("{pad}if n > {k} @ L{x} {{\n"));
                write(out, then, indent + 1, depth + 1);
                out.push_str(&format!("{pad}}} else {{\n"));
                write(out, otherwise, indent + 1, depth + 1);
                out.push_str(&format!("{pad}}}\n"));
            }
            G::Call { twice, p, q } => {
                let w = if *twice { "twice" } else { "step" };
                out.push_str(&format!(
                    "{pad}call {w}[P = L{p}, Q = L{q}](n) -> n @ L{p}\n"
                ));
            }
        }
    }
}

/// The oracle: the global meaning of the model, written directly.
struct Interp<'a> {
    n: Vec<i64>,
    lists: [&'a [i64]; 2],
    received: Vec<Vec<i64>>,
    /// An `Int` left 64 bits: in the language that is an error, so the run
    /// must fail rather than produce values (nested calls in loops double
    /// the counters quickly).
    overflowed: bool,
}

impl Interp<'_> {
    /// `a + b`, noting an overflow (then 0: the run is not compared).
    fn add(&mut self, a: i64, b: i64) -> i64 {
        a.checked_add(b).unwrap_or_else(|| {
            self.overflowed = true;
            0
        })
    }

    fn step(&mut self, p: usize, q: usize, m: i64) -> i64 {
        self.received[q].push(m);
        let twice = self.add(m, m);
        let m2 = self.add(twice, 1);
        self.received[p].push(m2);
        m2
    }

    fn run(&mut self, block: &[G]) {
        for g in block {
            match g {
                G::Msg(x, y) => {
                    let v = self.n[*x];
                    self.received[*y].push(v);
                    self.n[*y] = v;
                }
                G::Add(x, k) => self.n[*x] = self.add(self.n[*x], *k),
                G::For(x, body) => {
                    for &v in self.lists[*x] {
                        self.n[*x] = self.add(self.n[*x], v);
                        self.run(body);
                    }
                }
                G::If(x, k, then, otherwise) => {
                    if self.n[*x] > *k {
                        self.run(then);
                    } else {
                        self.run(otherwise);
                    }
                }
                G::Call { twice, p, q } => {
                    let m = self.n[*p];
                    let r = if *twice {
                        let a = self.step(*p, *q, m);
                        let a1 = self.add(a, 1);
                        self.step(*p, *q, a1)
                    } else {
                        self.step(*p, *q, m)
                    };
                    self.n[*p] = r;
                }
            }
        }
    }
}

fn seed() -> u64 {
    let seed = std::env::var("TROUPE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(7, |d| d.as_nanos() as u64)
        });
    eprintln!("new_forms seed: {seed} (TROUPE_TEST_SEED={seed} repeats it)");
    seed
}

/// The text of `main` in a generated source: the library before it calls
/// too, so counting forms in the whole source would count it.
fn main_of(src: &str) -> &str {
    src.find("workflow main").map_or(src, |i| &src[i..])
}

/// A random model of `left` statements at most, over 2 to 4 lifelines,
/// and its source (the library above, then `main`).
fn generated(seed: u64, left: usize) -> (Vec<G>, usize, String) {
    let mut rng = Rng(seed);
    let lifelines = 2 + rng.below(3);
    let mut g = Gen {
        rng,
        lifelines,
        left,
        calls: 0,
    };
    let model = g.block(0, 0);
    let mut src = String::from(LIBRARY);
    let inputs: Vec<String> = (0..lifelines)
        .map(|i| format!("n{i}: Int @ L{i}"))
        .chain(["xs: [Int] @ L0".into(), "ys: [Int] @ L1".into()])
        .collect();
    src.push_str(&format!(
        "\nworkflow main({}) {{\n  lifelines ",
        inputs.join(", ")
    ));
    let names: Vec<String> = (0..lifelines).map(|i| format!("L{i}")).collect();
    src.push_str(&names.join(", "));
    src.push('\n');
    for i in 0..lifelines {
        src.push_str(&format!("  act L{i}: n = n{i}\n"));
    }
    write(&mut src, &model, 1, 0);
    src.push_str("}\n");
    (model, lifelines, src)
}

#[test]
fn random_workflows_with_for_and_call_run_as_their_global_meaning() {
    let base = seed();
    let mut with_for = 0;
    let mut with_call = 0;
    for case in 0..2_000u64 {
        let seed = base.wrapping_add(case.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let (model, lifelines, src) = generated(seed, 4 + (seed % 12) as usize);
        with_for += usize::from(main_of(&src).contains("for v"));
        with_call += usize::from(main_of(&src).contains("call "));

        let (program, diagnostics) = troupe_check::check_text(&src);
        let program = program.unwrap_or_else(|| panic!("{src}\n{diagnostics:#?}"));
        let w = program.workflow("main").unwrap();
        let sem = Semantics::new(&program, w).unwrap();

        let mut r = Rng(seed ^ 0xfeed);
        let ns: Vec<i64> = (0..lifelines).map(|_| r.below(7) as i64 - 3).collect();
        let xs: Vec<i64> = (0..r.below(4)).map(|_| r.below(5) as i64 - 2).collect();
        let ys: Vec<i64> = (0..r.below(4)).map(|_| r.below(5) as i64 - 2).collect();
        let list = |v: &[i64]| Value::List(v.iter().map(|&x| Value::Int(x)).collect());
        let mut values: Vec<Value> = ns.iter().map(|&x| Value::Int(x)).collect();
        values.push(list(&xs));
        values.push(list(&ys));

        let mut oracle = Interp {
            n: ns.clone(),
            lists: [&xs, &ys],
            received: vec![Vec::new(); lifelines],
            overflowed: false,
        };
        oracle.run(&model);
        if oracle.overflowed {
            // The language makes integer overflow an error: so must the run.
            let opts = SimOptions {
                seed,
                decisions: Decisions::Evaluate,
                loop_bound: None,
                max_steps: 1_000_000,
            };
            let run = simulate(&program, w, sem.projection(), &values, &opts);
            assert!(
                run.as_ref()
                    .is_err_and(|e| e.to_string().contains("overflow")),
                "an overflowing run did not fail with an overflow (seed {seed}): {run:?}\n{src}"
            );
            continue;
        }

        for k in 0..2u64 {
            let opts = SimOptions {
                seed: seed.wrapping_add(k),
                decisions: Decisions::Evaluate,
                loop_bound: None,
                max_steps: 1_000_000,
            };
            let run = simulate(&program, w, sem.projection(), &values, &opts)
                .unwrap_or_else(|e| panic!("{src}\n{e}"));
            assert!(run.completed(), "deadlock (seed {seed}):\n{src}");
            sem.check(&run.execution.erase_control(), &MemberOptions::default())
                .unwrap_or_else(|e| panic!("not a member (seed {seed}): {e}\n{src}"));
            // The online monitor accepts the run, decisions included, in the
            // order the schedule made its events.
            let mut monitor = Monitor::new(&program, w).unwrap();
            let mut pos = vec![0usize; lifelines];
            for (l, k) in &run.schedule {
                let i = l.0 as usize;
                for e in &run.execution.words[i][pos[i]..pos[i] + k] {
                    monitor
                        .event(*l, e)
                        .unwrap_or_else(|e| panic!("monitor (seed {seed}): {e}\n{src}"));
                }
                pos[i] += k;
            }
            monitor
                .finish(false)
                .unwrap_or_else(|e| panic!("monitor at the end (seed {seed}): {e}\n{src}"));
            for (l, word) in run.execution.words.iter().enumerate() {
                let got: Vec<i64> = word
                    .iter()
                    .filter_map(|e| match e {
                        Event::Recv {
                            msg:
                                Message::Data {
                                    values: Some(v), ..
                                },
                            ..
                        } => Some(v.iter().filter_map(|x| match x {
                            Value::Int(i) => Some(*i),
                            _ => None,
                        })),
                        _ => None,
                    })
                    .flatten()
                    .collect();
                assert_eq!(
                    got, oracle.received[l],
                    "L{l} received other values (seed {seed}, inputs {ns:?} {xs:?} {ys:?}):\n{src}"
                );
            }
        }
    }
    assert!(with_for > 500 && with_call > 500, "{with_for} {with_call}");
}

/// The projection theorems for `for` and `call`, exhaustively per workflow:
/// small random workflows, written as source and checked by the real front
/// end (so `for` is the checker's owned loop and `call` its inlined body),
/// explored under every schedule and decision of the projected programs
/// with loops (a `for` is one) unrolled at most once per entry
/// (`troupe_oracle::explore`). No state deadlocks; the terminal executions
/// are exactly bounded ⟦P⟧ with control events from the brute-force
/// enumeration of the checked workflow (`troupe_oracle::global::enumerate`),
/// and their erasures exactly its chart.
#[test]
fn small_workflows_with_for_and_call_are_explored_exhaustively() {
    let base = seed();
    let (mut explored_n, mut skipped, mut states) = (0usize, 0usize, 0usize);
    let (mut with_for, mut with_call) = (0usize, 0usize);
    for case in 0..300u64 {
        let seed = base.wrapping_add(case.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let (_, _, src) = generated(seed, 2 + (seed % 6) as usize);
        let (program, diagnostics) = troupe_check::check_text(&src);
        let program = program.unwrap_or_else(|| panic!("{src}\n{diagnostics:#?}"));
        let w = program.workflow("main").unwrap();
        let sem = Semantics::new(&program, w).unwrap();
        let tags = |s| sem.projection().construct(s).map(|c| c.tag);
        let enumerate = |control| {
            troupe_oracle::global::enumerate(w, control, 1, 3000, &tags).expect("the oracle runs")
        };
        let (Some(expected), Some(chart)) = (enumerate(true), enumerate(false)) else {
            skipped += 1;
            continue;
        };
        let explored =
            match troupe_oracle::explore::explore(w, &sem.projection().flatten(), 1, 20_000) {
                Ok(x) => x,
                Err(troupe_oracle::explore::ExploreError::Budget) => {
                    skipped += 1;
                    continue;
                }
                Err(e) => panic!("seed {seed}: {e:?}\n{src}"),
            };
        let keys = |xs: &[troupe_msc::Execution]| {
            xs.iter()
                .map(troupe_msc::Execution::key)
                .collect::<std::collections::HashSet<_>>()
        };
        assert_eq!(
            keys(&explored.executions),
            keys(&expected),
            "seed {seed}: the schedules' runs are not bounded ⟦P⟧\n{src}"
        );
        let erased: Vec<_> = explored
            .executions
            .iter()
            .map(troupe_msc::Execution::erase_control)
            .collect();
        assert_eq!(
            keys(&erased),
            keys(&chart),
            "seed {seed}: erasures differ from the chart\n{src}"
        );
        explored_n += 1;
        states += explored.states;
        with_for += usize::from(main_of(&src).contains("for v"));
        with_call += usize::from(main_of(&src).contains("call "));
    }
    eprintln!(
        "{explored_n} workflows explored ({with_for} with `for`, {with_call} with `call`), {states} states, {skipped} too large"
    );
    assert!(
        explored_n >= 250 && with_for >= 40 && with_call >= 80,
        "{explored_n} explored ({with_for} for, {with_call} call), {skipped} too large"
    );
}
