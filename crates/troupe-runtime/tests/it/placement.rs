//! Placed runs, engine side: random well-typed workflows whose lifelines
//! are split at random into parts, each part run by its own engine run,
//! the parts talking only through a transport that numbers messages per
//! channel. One part is "killed" after a random number of sends (its run
//! dropped mid-flight, its later messages lost) and started again from
//! scratch beside the others, with nothing but the order in which its
//! lifelines' events were recorded (what the store hands a resumed part:
//! `RunJournal::recorded_order`).
//!
//! The oracles do not come from the code under test: the merged trace is
//! checked against ⟦P⟧ (with control events), its local words against
//! those of the same workflow run whole in one engine, the parts' results
//! against the whole run's, and the transport itself checks that a
//! restarted part repeats every message it had sent with the same number
//! and the same content, and never skips a number.
//!
//! Workflows with `par` regions and coregions are placed the same way.
//! There the recorded order matters: a lifeline's parts could interleave
//! otherwise in the second life than in the first, and the merged record
//! — the other parts' events caused by the first life's messages, the
//! victim's from its second — would then fit no causal order (seen here
//! before the victim was given its recorded order). Words are compared in
//! branch order (`troupe_oracle::global::branch_order`) with the global
//! workflow's run, and the transport's numbering is per branch's channel.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use troupe_check::ir::{LifelineId, StmtId};
use troupe_llm::BoxFuture;
use troupe_msc::Event;
use troupe_msc::{MemberOptions, Semantics};
use troupe_oracle::generate::{self, Shape};
use troupe_oracle::global;
use troupe_oracle::seeds::{Seeds, repeat_hint};
use troupe_project::testing::{GenConfig, Rng, random_inputs, random_program};
use troupe_runtime::{
    Elsewhere, Engine, EngineBuilder, Queued, Recorded, Remote, RemoteChannel, RunError,
    RunJournal, RunOptions, Schedule, StepKey, StepKind, Trace, TraceEntry,
};

/// The channels of one run, shared by its parts.
#[derive(Default)]
struct Wire {
    channels: Mutex<HashMap<RemoteChannel, Vec<Queued>>>,
    /// What went wrong at the transport (a repeat that differs, a gap).
    faults: Mutex<Vec<String>>,
    /// Bumped at every new message, for receivers waiting.
    changed: tokio::sync::watch::Sender<u64>,
}

impl Wire {
    /// A fault stops the run: every receiver gives up (rather than wait
    /// for a message that will never come).
    fn fault(&self, what: String) {
        self.faults.lock().unwrap().push(what);
        self.changed.send_modify(|n| *n += 1);
    }
}

/// One part's view of the wire.
struct Part {
    wire: Arc<Wire>,
    local: Vec<bool>,
    /// Sends after which this part "dies" (its messages are lost), and a
    /// signal when it does.
    die_after: Option<(usize, tokio::sync::watch::Sender<bool>)>,
    sends: Mutex<usize>,
}

impl Remote for Part {
    fn is_local(&self, lifeline: LifelineId) -> bool {
        self.local[lifeline.0 as usize]
    }

    fn send(&self, channel: RemoteChannel, seq: u64, message: &Queued) {
        let mut sends = self.sends.lock().unwrap();
        *sends += 1;
        if let Some((limit, dead)) = &self.die_after
            && *sends > *limit
        {
            dead.send_replace(true);
            return;
        }
        let mut channels = self.wire.channels.lock().unwrap();
        let queue = channels.entry(channel).or_default();
        match seq.cmp(&(queue.len() as u64)) {
            std::cmp::Ordering::Less => {
                if &queue[seq as usize] != message {
                    let first = format!("{:?}", queue[seq as usize]);
                    drop(channels);
                    self.wire.fault(format!(
                        "{channel:?} #{seq} repeated as {message:?}, first {first}"
                    ));
                }
            }
            std::cmp::Ordering::Equal => {
                queue.push(message.clone());
                self.wire.changed.send_modify(|n| *n += 1);
            }
            std::cmp::Ordering::Greater => {
                let before = queue.len();
                drop(channels);
                self.wire.fault(format!(
                    "{channel:?}: #{seq} sent with only {before} before"
                ));
            }
        }
    }

    fn receive(
        &self,
        channel: RemoteChannel,
        seq: u64,
    ) -> BoxFuture<'static, Result<Vec<Queued>, Elsewhere>> {
        let wire = self.wire.clone();
        Box::pin(async move {
            let mut changed = wire.changed.subscribe();
            loop {
                changed.borrow_and_update();
                if let Some(f) = wire.faults.lock().unwrap().first() {
                    return Err(Elsewhere(format!("the wire failed: {f}")));
                }
                {
                    let channels = wire.channels.lock().unwrap();
                    if let Some(q) = channels.get(&channel)
                        && q.len() as u64 > seq
                    {
                        return Ok(q[seq as usize..].to_vec());
                    }
                }
                if changed.changed().await.is_err() {
                    return Err(Elsewhere("the wire is gone".into()));
                }
            }
        })
    }
}

/// A journal that keeps only the order of each lifeline's events: it
/// records them in one life of a part and hands them to the next as
/// [`RunJournal::recorded_order`], and remembers no step (every action is
/// performed again, as from scratch).
struct Order {
    recorded: Mutex<Vec<Vec<StmtId>>>,
    before: Option<Vec<Vec<StmtId>>>,
}

impl Order {
    fn new(lifelines: usize, before: Option<Vec<Vec<StmtId>>>) -> Arc<Order> {
        Arc::new(Order {
            recorded: Mutex::new(vec![Vec::new(); lifelines]),
            before,
        })
    }
}

impl RunJournal for Order {
    fn event(&self, lifeline: LifelineId, event: &Event) {
        self.recorded.lock().unwrap()[lifeline.0 as usize].push(event.stmt());
    }

    fn recorded(&self, _: &StepKey) -> Option<Recorded> {
        None
    }

    fn begin_effect(
        &self,
        _: &StepKey,
        _: StepKind,
        _: &[troupe_check::Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    fn record(
        &self,
        _: &StepKey,
        _: StepKind,
        _: &[troupe_check::Value],
        _: &[troupe_check::Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    fn recorded_order(&self) -> Option<Vec<Vec<StmtId>>> {
        self.before.clone()
    }

    fn finish(
        &self,
        _: Result<&[(String, troupe_check::Value)], &RunError>,
    ) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}

fn options(seed: u64, part: Arc<Part>, schedule: Schedule) -> RunOptions {
    RunOptions {
        run_id: format!("w{seed}"),
        seed,
        trace: true,
        schedule,
        journal: None,
        remote: Some(part),
        park_after: None,
        run_uid: None,
        interrupt: None,
    }
}

/// Runs `engine` placed in `parts` (a part index per lifeline), killing
/// part `victim` after `die_after` sends and starting it again. Returns the
/// merged trace and the results.
fn run_placed(
    rt: &tokio::runtime::Runtime,
    engine: &Engine,
    inputs: &[troupe_check::Value],
    seed: u64,
    parts: &[usize],
    victim: usize,
    die_after: usize,
) -> (Trace, Vec<(String, troupe_check::Value)>, Vec<String>) {
    let count = parts.iter().max().unwrap() + 1;
    let wire = Arc::new(Wire::default());
    let view = |p: usize, die: Option<(usize, tokio::sync::watch::Sender<bool>)>| {
        Arc::new(Part {
            wire: wire.clone(),
            local: parts.iter().map(|&q| q == p).collect(),
            die_after: die,
            sends: Mutex::new(0),
        })
    };
    rt.block_on(async {
        let mut others = Vec::new();
        for p in (0..count).filter(|&p| p != victim) {
            let engine = engine.clone();
            let inputs = inputs.to_vec();
            let opts = options(seed, view(p, None), Schedule::Random(seed ^ p as u64 | 1));
            others.push(tokio::spawn(async move { engine.run(inputs, opts).await }));
        }
        // The victim's first life: it ends, or dies after `die_after` sends.
        let (dead_tx, mut dead_rx) = tokio::sync::watch::channel(false);
        let n = engine.workflow().lifelines.len();
        let order = Order::new(n, None);
        let first = engine.run(
            inputs.to_vec(),
            RunOptions {
                journal: Some(order.clone()),
                ..options(
                    seed,
                    view(victim, Some((die_after, dead_tx))),
                    Schedule::RunToBlock,
                )
            },
        );
        let died = tokio::select! {
            out = first => { out.unwrap_or_else(|e| panic!("part {victim}: {e}")); false }
            _ = dead_rx.wait_for(|d| *d) => true,
        };
        let _ = died;
        // Its second life, from the start, beside the others still running,
        // in the order its events were recorded before it died.
        let before = order.recorded.lock().unwrap().clone();
        let second = engine
            .run(
                inputs.to_vec(),
                RunOptions {
                    journal: Some(Order::new(n, Some(before))),
                    ..options(seed, view(victim, None), Schedule::Random(seed ^ 0x55))
                },
            )
            .await
            .unwrap_or_else(|e| panic!("part {victim}, restarted: {e}"));
        let mut outcomes = vec![(victim, second)];
        for (p, h) in (0..count).filter(|&p| p != victim).zip(others) {
            outcomes.push((
                p,
                h.await.unwrap().unwrap_or_else(|e| panic!("part {p}: {e}")),
            ));
        }
        let mut entries: Vec<TraceEntry> = Vec::new();
        let mut results = Vec::new();
        for (p, out) in outcomes {
            let trace = out.trace.unwrap();
            // A part records only its own lifelines' events.
            for e in &trace.entries {
                assert_eq!(
                    parts[e.lifeline.0 as usize], p,
                    "part {p} recorded an event of another part's lifeline"
                );
            }
            entries.extend(trace.entries);
            results.extend(out.results);
        }
        for (time, e) in entries.iter_mut().enumerate() {
            e.time = time as u64;
        }
        let faults = wire.faults.lock().unwrap().clone();
        (Trace { entries }, results, faults)
    })
}

#[test]
fn placed_parts_with_one_killed_and_restarted_run_the_chart() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let seeds = Seeds::new(
        "placed_parts_with_one_killed_and_restarted_run_the_chart",
        600,
    );
    let mut crossing = 0usize;
    for seed in seeds.iter() {
        let hint = repeat_hint(seed);
        let cfg = GenConfig {
            lifelines: 2 + (seed % 5) as usize,
            max_depth: (seed % 4) as usize,
            max_block: 1 + (seed % 4) as usize,
            max_stmts: 40,
        };
        let program = random_program(seed, &cfg);
        let semantics = Semantics::new(&program, &program.workflows[0]).unwrap();
        let inputs = random_inputs(&program.workflows[0], seed);
        let engine = EngineBuilder::from_program(program).build().unwrap();
        let n = engine.workflow().lifelines.len();
        let whole = rt
            .block_on(engine.run(
                inputs.clone(),
                RunOptions {
                    run_id: format!("w{seed}"),
                    seed,
                    ..RunOptions::default()
                },
            ))
            .unwrap_or_else(|e| panic!("workflow {seed}, whole: {e}\n{hint}"));
        let whole_exec = whole.trace.as_ref().unwrap().execution(n);
        let (parts, victim, die_after) = placement(seed, n);
        let (trace, results, faults) =
            run_placed(&rt, &engine, &inputs, seed, &parts, victim, die_after);
        assert!(faults.is_empty(), "workflow {seed}: {faults:?}\n{hint}");
        let exec = trace.execution(n);
        engine
            .verify_execution("placed", &exec, false)
            .unwrap_or_else(|e| panic!("workflow {seed}, placed {parts:?}: {e}\n{hint}"));
        semantics
            .check(
                &exec,
                &MemberOptions {
                    control: true,
                    prefix: false,
                },
            )
            .unwrap_or_else(|e| panic!("workflow {seed}, with control events: {e}\n{hint}"));
        assert_eq!(
            exec, whole_exec,
            "workflow {seed}: placed {parts:?}, the local words differ from a whole run\n{hint}"
        );
        let mut got = results.clone();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want = whole.results.clone();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got, want, "workflow {seed}: results\n{hint}");
        crossing += exec.len();
    }
    assert!(
        seeds.cases < 100 || crossing > 5_000,
        "the generated workflows are too small to mean much ({crossing} events)"
    );
}

/// Random lifelines of `n` split into 2 or more parts (each part holding
/// at least one lifeline), a victim part and after how many sends it dies.
fn placement(seed: u64, n: usize) -> (Vec<usize>, usize, usize) {
    let mut rng = Rng::new(seed ^ 0x9a11);
    let count = 2 + rng.below(n - 1);
    let mut parts: Vec<usize> = (0..n).map(|_| rng.below(count)).collect();
    for (p, part) in parts.iter_mut().enumerate().take(count) {
        *part = p;
    }
    let count = parts.iter().max().unwrap() + 1;
    let victim = rng.below(count);
    (parts, victim, rng.below(12))
}

#[test]
fn placed_concurrent_workflows_with_one_part_killed_and_restarted_run_the_chart() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let seeds = Seeds::new(
        "placed_concurrent_workflows_with_one_part_killed_and_restarted_run_the_chart",
        400,
    );
    let (mut placed, mut events) = (0usize, 0usize);
    for seed in seeds.iter() {
        let hint = repeat_hint(seed);
        let Some(program) = generate::program_with_par(seed, |rng| Shape {
            asynchronous: false,
            ..Shape::concurrent(rng, 40)
        }) else {
            continue;
        };
        let w = program.workflows[0].clone();
        let semantics = Semantics::new(&program, &w).unwrap();
        let tags = |s| semantics.projection().construct(s).map(|c| c.tag);
        let inputs = generate::inputs(&w, seed);
        let expected = global::run(&w, &inputs, true, &tags)
            .unwrap_or_else(|e| panic!("workflow {seed}: the oracle fails: {e}\n{hint}"));
        // The generator declares every kind of action, and an engine
        // needs a performer for each, though only `bump` is called here.
        let engine = crate::oracle::engine_of(&program, &Default::default());
        let n = w.lifelines.len();
        let (parts, victim, die_after) = placement(seed, n);
        let (trace, results, faults) =
            run_placed(&rt, &engine, &inputs, seed, &parts, victim, die_after);
        assert!(faults.is_empty(), "workflow {seed}: {faults:?}\n{hint}");
        let exec = trace.execution(n);
        engine
            .verify_execution("placed", &exec, false)
            .unwrap_or_else(|e| panic!("workflow {seed}, placed {parts:?}: {e}\n{hint}"));
        semantics
            .check(
                &exec,
                &MemberOptions {
                    control: true,
                    prefix: false,
                },
            )
            .unwrap_or_else(|e| panic!("workflow {seed}, with control events: {e}\n{hint}"));
        assert_eq!(
            global::branch_order(&w, &exec),
            expected.execution,
            "workflow {seed}: placed {parts:?}, the words in branch order are not the global run's\n{hint}"
        );
        let mut got: Vec<_> = results.into_iter().map(|(_, v)| v).collect();
        got.sort_by_key(|v| format!("{v:?}"));
        let mut want = expected.results.clone();
        want.sort_by_key(|v| format!("{v:?}"));
        assert_eq!(got, want, "workflow {seed}: results\n{hint}");
        placed += 1;
        events += exec.len();
    }
    eprintln!("{placed} concurrent workflows placed, {events} events");
    if seeds.cases >= 100 {
        assert!(
            placed as u64 * 10 >= seeds.cases * 9 && events > 5_000,
            "too few: {placed} workflows, {events} events"
        );
    }
}

/// The fan-out of `par.rs`: three branches, two of them between A and B.
const FAN: &str = include_str!("../data/fan.troupe");

/// `par` branches keep their own channels across parts: the two branches
/// between A and B travel on two lanes.
#[test]
fn par_branches_across_parts_keep_their_lanes() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let b = EngineBuilder::from_source(FAN).unwrap_or_else(|d| panic!("{d:?}"));
    let program = b.program().clone();
    let engine = b.build().unwrap();
    let sem = Semantics::new(&program, &program.workflows[0]).unwrap();
    let inputs = vec![troupe_check::Value::Int(3)];
    for seed in 0..60u64 {
        let parts = [0, 1 + (seed % 2) as usize, 1, 2 - (seed % 2) as usize];
        let (trace, results, faults) = run_placed(
            &rt,
            &engine,
            &inputs,
            seed,
            &parts,
            (seed % 3) as usize,
            (seed % 5) as usize,
        );
        assert!(faults.is_empty(), "{faults:?}");
        engine
            .verify_execution("fan", &trace.execution(4), false)
            .unwrap();
        sem.check(
            &trace.execution(4),
            &MemberOptions {
                control: true,
                prefix: false,
            },
        )
        .unwrap();
        let mut results = results;
        results.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            results,
            vec![
                ("s".to_owned(), troupe_check::Value::Int(4 + 6 + 13)),
                ("t".to_owned(), troupe_check::Value::Int(4 + 6)),
            ]
        );
    }
}
