//! The runtime against the global workflow run directly
//! (`troupe_oracle::global`): random workflows of up to a few hundred
//! statements with asynchronous actions — an LLM, an effect, a person and a
//! tool, each answering after a random number of scheduler turns, so that
//! actions complete in varied orders — run under random and run-to-block
//! schedules. Each run must produce exactly the global workflow's execution
//! (every word, value, decision and control message; guards are evaluated
//! by the oracle's own evaluator), return its results, pass verification,
//! and call each action exactly as often as the workflow performs it,
//! counted by the performers themselves. Seeds vary per run
//! (`TROUPE_TEST_SEED` repeats one).
//!
//! With `par` regions and coregions (a lifeline's parts run concurrently,
//! so its word may interleave its branches in any order), a run must be the
//! global workflow's execution up to those interleavings
//! (`global::conforms`), its events in the order they happened must fit
//! FIFO channels per branch (`global::fifo`), and membership in ⟦P⟧ is
//! checked by both of troupe-msc's implementations.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use troupe_check::Value;
use troupe_check::ir::{ActionId, Call, StmtKind};
use troupe_llm::{BoxFuture, LlmAnswer, LlmBackend, LlmError, LlmRequest};
use troupe_msc::Event;
use troupe_oracle::generate::{self, ASK, FETCH, STORE, Shape, THINK, action_result};
use troupe_oracle::global;
use troupe_oracle::seeds::{Rng, Seeds, mix, repeat_hint};
use troupe_runtime::{
    EngineBuilder, Externs, HumanInbox, HumanTask, RunOptions, Schedule, ToolCall, ToolHost,
};

/// Calls per action, and a generator of delays shared by the performers.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    pub(crate) calls: [AtomicUsize; 5],
    pub(crate) state: AtomicU64,
}

impl Ledger {
    fn call(&self, a: ActionId) {
        self.calls[a.0 as usize].fetch_add(1, Ordering::SeqCst);
    }

    /// A number of scheduler turns to wait, 0..8.
    fn turns(&self) -> u64 {
        mix(self.state.fetch_add(1, Ordering::SeqCst)) % 8
    }
}

async fn wait(turns: u64) {
    for _ in 0..turns {
        tokio::task::yield_now().await;
    }
}

fn arg(text: &str) -> i64 {
    text.rsplit(": ")
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no integer in {text:?}"))
}

#[derive(Debug)]
struct Model(Arc<Ledger>);

impl LlmBackend for Model {
    fn describe(&self) -> String {
        "oracle".into()
    }

    fn call<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmAnswer, LlmError>> {
        self.0.call(THINK);
        let turns = self.0.turns();
        let x = arg(&request.prompt);
        Box::pin(async move {
            wait(turns).await;
            Ok(LlmAnswer {
                values: vec![Value::Int(action_result(THINK, x))],
                tool_calls: Vec::new(),
                model: "oracle".into(),
                usage: None,
                latency: std::time::Duration::ZERO,
                attempts: 1,
                detail: Default::default(),
            })
        })
    }
}

#[derive(Debug)]
struct People(Arc<Ledger>);

impl HumanInbox for People {
    fn ask(&self, task: HumanTask) -> BoxFuture<'static, Result<serde_json::Value, String>> {
        self.0.call(ASK);
        let turns = self.0.turns();
        let x = arg(&task.prompt);
        Box::pin(async move {
            wait(turns).await;
            Ok(serde_json::json!(action_result(ASK, x)))
        })
    }
}

#[derive(Debug)]
struct Tools(Arc<Ledger>);

impl ToolHost for Tools {
    fn call(&self, call: ToolCall) -> BoxFuture<'static, Result<Vec<Value>, String>> {
        self.0.call(FETCH);
        let turns = self.0.turns();
        let x = call.arguments["x"].as_i64().expect("an integer argument");
        Box::pin(async move {
            wait(turns).await;
            Ok(vec![Value::Int(action_result(FETCH, x))])
        })
    }
}

/// How often the execution performs each action.
pub(crate) fn performed(
    w: &troupe_check::ir::Workflow,
    exec: &troupe_msc::Execution,
) -> [usize; 5] {
    let mut action_of = vec![None; w.stmt_count as usize];
    fn walk(b: &troupe_check::ir::Block, out: &mut Vec<Option<ActionId>>) {
        for s in &b.stmts {
            match &s.kind {
                StmtKind::Act {
                    call: Call::Action { action, .. },
                    ..
                } => out[s.id.0 as usize] = Some(*action),
                StmtKind::If {
                    then: a,
                    otherwise: b,
                    ..
                }
                | StmtKind::While {
                    body: a, exit: b, ..
                } => {
                    walk(a, out);
                    walk(b, out);
                }
                StmtKind::Par { branches } => branches.iter().for_each(|b| walk(b, out)),
                _ => {}
            }
        }
    }
    walk(&w.body, &mut action_of);
    let mut counts = [0; 5];
    for e in exec.words.iter().flatten() {
        if let Event::Act { stmt, .. } = e
            && let Some(a) = action_of[stmt.0 as usize]
        {
            counts[a.0 as usize] += 1;
        }
    }
    counts
}

/// An engine of `program` whose performers count their calls in `ledger`.
pub(crate) fn engine_of(
    program: &troupe_check::ir::Program,
    ledger: &Arc<Ledger>,
) -> troupe_runtime::Engine {
    let mut externs = Externs::new();
    let l = ledger.clone();
    externs.effect("store", move |call| {
        l.call(STORE);
        let turns = l.turns();
        async move {
            wait(turns).await;
            match call.args.first() {
                Some(Value::Int(x)) => Ok(vec![Value::Int(action_result(STORE, *x))]),
                other => Err(format!("store got {other:?}")),
            }
        }
    });
    EngineBuilder::from_program(program.clone())
        .externs(externs)
        .llm(Arc::new(Model(ledger.clone())))
        .humans(Arc::new(People(ledger.clone())))
        .tools(Arc::new(Tools(ledger.clone())))
        .build()
        .unwrap()
}

#[test]
fn concurrent_workflows_run_as_the_global_workflow_up_to_interleaving() {
    let seeds = Seeds::new(
        "concurrent_workflows_run_as_the_global_workflow_up_to_interleaving",
        2_000,
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut pars, mut coregions, mut shared, mut events) = (0usize, 0usize, 0usize, 0usize);
    for seed in seeds.iter() {
        let hint = repeat_hint(seed);
        let mut rng = Rng::new(seed);
        let program = generate::program(seed, &Shape::concurrent(&mut rng, 60));
        let w = program.workflows[0].clone();
        let projection = troupe_project::project(&program, &w).unwrap();
        let tags = |s| projection.construct(s).map(|c| c.tag);
        let inputs = generate::inputs(&w, seed);
        let expected = global::run(&w, &inputs, true, &tags)
            .unwrap_or_else(|e| panic!("seed {seed}: the oracle fails: {e}"));
        let counts = performed(&w, &expected.execution);
        let semantics = troupe_msc::Semantics::new(&program, &w).unwrap();
        coregions += w.coregions.len();
        pars += projection.lanes.len().saturating_sub(1);
        // Regions where one lifeline has events of two branches or more.
        shared += expected
            .regions
            .iter()
            .filter(|r| {
                let b = global::branches_of(&w);
                let word = &expected.execution.words[r.lifeline.0 as usize][r.start..r.end];
                let mut seen: Vec<usize> = word
                    .iter()
                    .filter_map(|e| {
                        b[e.stmt().0 as usize]
                            .iter()
                            .find(|(p, _)| *p == r.par)
                            .map(|x| x.1)
                    })
                    .collect();
                seen.sort_unstable();
                seen.dedup();
                seen.len() > 1
            })
            .count();
        for schedule in [Schedule::Random(mix(seed) | 1), Schedule::RunToBlock] {
            let ledger = Arc::new(Ledger {
                state: AtomicU64::new(seed ^ 0xd1ce),
                ..Ledger::default()
            });
            let engine = engine_of(&program, &ledger);
            let outcome = rt
                .block_on(engine.run(
                    inputs.clone(),
                    RunOptions {
                        run_id: format!("par-{seed}"),
                        seed,
                        trace: true,
                        schedule,
                        journal: None,
                        remote: None,
                        park_after: None,
                        run_uid: None,
                        interrupt: None,
                    },
                ))
                .unwrap_or_else(|e| panic!("seed {seed} under {schedule:?}: {e}\n{hint}"));
            let trace = outcome.trace.unwrap();
            let exec = trace.execution(w.lifelines.len());
            global::conforms(&w, &expected, &exec)
                .unwrap_or_else(|e| panic!("seed {seed} under {schedule:?}: {e}\n{hint}"));
            global::fifo(&w, trace.entries.iter().map(|e| (e.lifeline, &e.event)))
                .unwrap_or_else(|e| panic!("seed {seed} under {schedule:?}: {e}\n{hint}"));
            let results: Vec<Value> = outcome.results.into_iter().map(|(_, v)| v).collect();
            assert_eq!(results, expected.results, "seed {seed}: results\n{hint}");
            engine
                .verify("par", &trace)
                .unwrap_or_else(|e| panic!("seed {seed}: the monitor: {e}\n{hint}"));
            for control in [true, false] {
                semantics
                    .check(
                        &exec,
                        &troupe_msc::MemberOptions {
                            control,
                            prefix: false,
                        },
                    )
                    .unwrap_or_else(|e| {
                        panic!("seed {seed}: membership (control {control}): {e}\n{hint}")
                    });
            }
            let called: Vec<usize> = ledger
                .calls
                .iter()
                .map(|c| c.load(Ordering::SeqCst))
                .collect();
            assert_eq!(&called[1..], &counts[1..], "seed {seed}: calls\n{hint}");
            events += exec.len();
        }
    }
    eprintln!(
        "{} workflows: {pars} par branches, {coregions} coregions, {shared} regions where a lifeline runs parts of several branches, {events} events",
        seeds.cases
    );
    if seeds.cases >= 500 {
        assert!(
            pars > 1000 && coregions > 200 && shared > 200,
            "too few concurrent forms"
        );
    }
}

#[test]
fn runs_with_asynchronous_actions_are_the_global_workflows_execution() {
    let seeds = Seeds::new(
        "runs_with_asynchronous_actions_are_the_global_workflows_execution",
        250,
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut events, mut asynchronous, mut most) = (0usize, 0usize, 0usize);
    for seed in seeds.iter() {
        let hint = repeat_hint(seed);
        let mut rng = Rng::new(seed);
        let program = generate::program(seed, &Shape::large(&mut rng, 300));
        let w = program.workflows[0].clone();
        most = most.max(generate::count_stmts(&w.body));
        let projection = troupe_project::project(&program, &w).unwrap();
        let tags = |s| projection.construct(s).map(|c| c.tag);
        let inputs = generate::inputs(&w, seed);
        let expected = global::run(&w, &inputs, true, &tags)
            .unwrap_or_else(|e| panic!("seed {seed}: the oracle fails: {e}"));
        let counts = performed(&w, &expected.execution);
        for schedule in [Schedule::Random(mix(seed) | 1), Schedule::RunToBlock] {
            let ledger = Arc::new(Ledger {
                state: AtomicU64::new(seed ^ 0xd1ce),
                ..Ledger::default()
            });
            let mut externs = Externs::new();
            let l = ledger.clone();
            externs.effect("store", move |call| {
                l.call(STORE);
                let turns = l.turns();
                async move {
                    wait(turns).await;
                    match call.args.first() {
                        Some(Value::Int(x)) => Ok(vec![Value::Int(action_result(STORE, *x))]),
                        other => Err(format!("store got {other:?}")),
                    }
                }
            });
            let engine = EngineBuilder::from_program(program.clone())
                .externs(externs)
                .llm(Arc::new(Model(ledger.clone())))
                .humans(Arc::new(People(ledger.clone())))
                .tools(Arc::new(Tools(ledger.clone())))
                .build()
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            let outcome = rt
                .block_on(engine.run(
                    inputs.clone(),
                    RunOptions {
                        run_id: format!("oracle-{seed}"),
                        seed,
                        trace: true,
                        schedule,
                        journal: None,
                        remote: None,
                        park_after: None,
                        run_uid: None,
                        interrupt: None,
                    },
                ))
                .unwrap_or_else(|e| panic!("seed {seed} under {schedule:?}: {e}\n{hint}"));
            let trace = outcome.trace.unwrap();
            let exec = trace.execution(w.lifelines.len());
            for (l, (a, b)) in expected.execution.words.iter().zip(&exec.words).enumerate() {
                let i = a.iter().zip(b).take_while(|(x, y)| x == y).count();
                assert!(
                    a.len() == b.len() && i == a.len(),
                    "seed {seed} under {schedule:?}: {} differs at event {i} of {}: expected {:?}, ran {:?}\n{hint}",
                    w.lifelines[l].name,
                    a.len(),
                    a.get(i),
                    b.get(i),
                );
            }
            let results: Vec<Value> = outcome.results.into_iter().map(|(_, v)| v).collect();
            assert_eq!(results, expected.results, "seed {seed}: results\n{hint}");
            engine
                .verify("oracle", &trace)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{hint}"));
            let called: Vec<usize> = ledger
                .calls
                .iter()
                .map(|c| c.load(Ordering::SeqCst))
                .collect();
            // `bump` is pure and evaluated in place: not counted by a performer.
            assert_eq!(
                &called[1..],
                &counts[1..],
                "seed {seed}: calls per action (think, store, ask, fetch)\n{hint}"
            );
            events += exec.len();
            asynchronous += counts[1..].iter().sum::<usize>();
        }
    }
    eprintln!(
        "{events} events compared, {asynchronous} asynchronous actions, largest workflow {most} statements"
    );
    if seeds.cases >= 100 {
        assert!(
            asynchronous >= 1000,
            "few asynchronous actions: {asynchronous}"
        );
    }
}
