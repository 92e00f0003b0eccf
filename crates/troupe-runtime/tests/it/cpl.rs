//! Causal guards across crashes: random workflows with causal guards
//! (`troupe_oracle::cpl::generate`, with model calls that answer after a
//! few scheduler turns) run through the real engine with a durable journal
//! of this module, are killed at random points and resumed — from their
//! latest checkpoint (taken every few events) or, sometimes, by replaying
//! their history from the start — until they finish.
//!
//! A kill is either an interrupt at the next step boundary or the run's
//! future dropped where it waits (a process that dies). Either way the
//! journal keeps only what a store would have made durable: the step
//! results, the checkpoints with the events before them, and some prefix
//! of the events after the latest checkpoint. Whatever the dead run did
//! after the kill is lost.
//!
//! The finished history must take the same decisions as an uninterrupted
//! run: without `par`, every lifeline's word (decisions included) equals
//! the uninterrupted run's (a causal guard reads only the causal past,
//! which the words determine); with `par`, whose parts interleave as the
//! schedule has them, the history is at least a verified run. In both, every
//! causal decision recorded equals the brute-force reference
//! (`troupe_oracle::cpl::guard_values`) on the history, every event a
//! resumed run replays equals the one recorded, and the results equal the
//! uninterrupted run's. What makes this a test of the monitor's state in
//! checkpoints: many causal decisions are taken by runs restored from a
//! checkpoint, whose views (clocks, `at` and `once` flags, `seen` values,
//! `prev`/`since` values) come only from the checkpoint.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use troupe_check::Value;
use troupe_check::ir::{LifelineId, StmtId};
use troupe_llm::{BoxFuture, LlmAnswer, LlmBackend, LlmError, LlmRequest};
use troupe_msc::{Event, Execution};
use troupe_oracle::cpl::{generate, guard_values};
use troupe_oracle::seeds::{Rng, Seeds, repeat_hint};
use troupe_runtime::{
    Checkpoint, EngineBuilder, Interrupt, Recorded, RunError, RunJournal, RunOptions, Schedule,
    StepKey, StepKind,
};

/// The generated workflows' model: `guess(n)` is a fixed function of `n`,
/// answered after a few scheduler turns (so a run waits, and can be
/// dropped there).
#[derive(Debug)]
struct Model;

fn guess(n: i64) -> i64 {
    (n * 7 + 3).rem_euclid(11) - 5
}

impl LlmBackend for Model {
    fn describe(&self) -> String {
        "cpl-test".into()
    }

    fn call<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmAnswer, LlmError>> {
        let n: i64 = request
            .prompt
            .rsplit(' ')
            .next()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no integer in {:?}", request.prompt));
        let turns = n.rem_euclid(4);
        Box::pin(async move {
            for _ in 0..turns {
                tokio::task::yield_now().await;
            }
            Ok(LlmAnswer {
                values: vec![Value::Int(guess(n))],
                tool_calls: Vec::new(),
                model: "cpl-test".into(),
                usage: None,
                latency: Duration::ZERO,
                attempts: 1,
                detail: Default::default(),
            })
        })
    }
}

/// A checkpoint as the journal keeps it: where the history stood.
struct Kept {
    /// Events in the history before it.
    at: usize,
    checkpoint: Checkpoint,
}

/// What the journal holds (the "store"), and the incarnation's cursor.
#[derive(Default)]
struct State {
    /// The recorded events, in the order they came.
    log: Vec<(LifelineId, Event)>,
    /// Whether each was recorded by an incarnation restored from a
    /// checkpoint.
    restored: Vec<bool>,
    results: HashMap<String, Vec<Value>>,
    checkpoints: Vec<Kept>,
    /// Events made durable (with the latest checkpoint).
    durable: usize,
    /// This incarnation: per lifeline, events it has handed over (replayed
    /// ones included) and events the history held when it started.
    seen: Vec<usize>,
    stored: Vec<usize>,
    resume: Option<Checkpoint>,
    order: Option<Vec<Vec<StmtId>>>,
    from_checkpoint: bool,
    /// New events this incarnation recorded, and after how many it dies.
    fresh: usize,
    kill_at: Option<usize>,
    /// Killed: nothing it does reaches the store any more.
    dead: bool,
    kill: Option<Kill>,
    /// Replayed events that differ from the recorded ones.
    mismatches: Vec<String>,
    /// Results a resumed run took from the journal.
    taken: usize,
    finished: bool,
}

/// How the incarnation is killed once it has recorded `kill_at` events.
enum Kill {
    /// At its next step boundary.
    Interrupt(Interrupt),
    /// Where it next waits: its future is dropped.
    Drop(Arc<tokio::sync::Notify>),
}

struct Journal {
    state: Mutex<State>,
    every: u64,
}

impl Journal {
    fn new(lifelines: usize, every: u64) -> Journal {
        Journal {
            state: Mutex::new(State {
                seen: vec![0; lifelines],
                stored: vec![0; lifelines],
                ..State::default()
            }),
            every,
        }
    }

    /// Crashes the incarnation that ran: events after the latest
    /// checkpoint survive up to a random point; then sets up the next one,
    /// resumed from the latest checkpoint unless `replay`.
    fn crash_and_resume(&self, rng: &mut Rng, replay: bool, kill: Option<(usize, Kill)>) {
        let mut s = self.state.lock().unwrap();
        let keep = s.durable + rng.below(s.log.len() - s.durable + 1);
        s.log.truncate(keep);
        s.restored.truncate(keep);
        let n = s.seen.len();
        let count = |log: &[(LifelineId, Event)]| {
            let mut c = vec![0; n];
            for (l, _) in log {
                c[l.0 as usize] += 1;
            }
            c
        };
        s.stored = count(&s.log);
        let (at, resume) = match s.checkpoints.last() {
            Some(k) if !replay => (k.at, Some(k.checkpoint.clone())),
            _ => (0, None),
        };
        s.seen = count(&s.log[..at]);
        let mut order = vec![Vec::new(); n];
        for (l, e) in &s.log[at..] {
            order[l.0 as usize].push(e.stmt());
        }
        s.from_checkpoint = resume.is_some();
        s.resume = resume;
        s.order = Some(order);
        s.fresh = 0;
        s.dead = false;
        (s.kill_at, s.kill) = match kill {
            Some((k, how)) => (Some(k), Some(how)),
            None => (None, None),
        };
    }

    fn execution(&self, lifelines: usize) -> Execution {
        let s = self.state.lock().unwrap();
        let mut exec = Execution::new(lifelines);
        for (l, e) in &s.log {
            exec.words[l.0 as usize].push(e.clone());
        }
        exec
    }
}

impl RunJournal for Journal {
    fn event(&self, lifeline: LifelineId, event: &Event) {
        let mut s = self.state.lock().unwrap();
        if s.dead {
            return;
        }
        let l = lifeline.0 as usize;
        s.seen[l] += 1;
        if s.seen[l] <= s.stored[l] {
            // Replayed: it must be the event recorded there.
            let k = s.seen[l] - 1;
            let recorded = s.log.iter().filter(|(x, _)| *x == lifeline).nth(k);
            if recorded.map(|(_, e)| e) != Some(event) {
                let m = format!("L{l} event {k}: replayed {event:?}, recorded {recorded:?}");
                s.mismatches.push(m);
            }
            return;
        }
        s.log.push((lifeline, event.clone()));
        let restored = s.from_checkpoint;
        s.restored.push(restored);
        s.fresh += 1;
        if s.kill_at == Some(s.fresh) {
            s.dead = true;
            match &s.kill {
                Some(Kill::Interrupt(i)) => i.trigger(),
                Some(Kill::Drop(n)) => n.notify_one(),
                None => {}
            }
        }
    }

    fn recorded(&self, key: &StepKey) -> Option<Recorded> {
        let mut s = self.state.lock().unwrap();
        let v = s.results.get(&key.to_string()).cloned()?;
        s.taken += 1;
        Some(Recorded::Done(v))
    }

    fn begin_effect(
        &self,
        _: &StepKey,
        _: StepKind,
        _: &[Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    fn record(
        &self,
        key: &StepKey,
        _: StepKind,
        _: &[Value],
        outputs: &[Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        let mut s = self.state.lock().unwrap();
        if !s.dead {
            s.results.insert(key.to_string(), outputs.to_vec());
        }
        Box::pin(async { Ok(()) })
    }

    fn checkpoint_every(&self) -> Option<u64> {
        Some(self.every)
    }

    fn checkpoint(&self, checkpoint: Checkpoint) -> Option<u64> {
        let mut s = self.state.lock().unwrap();
        // While a resumed run replays what the history holds, its cursor is
        // behind the history: checkpoint once it has caught up (as the
        // store does).
        if !s.dead && s.seen.iter().zip(&s.stored).all(|(a, b)| a >= b) {
            let at = s.log.len();
            s.checkpoints.push(Kept { at, checkpoint });
            s.durable = at;
        }
        Some(self.every)
    }

    fn resume_from(&self) -> Option<Checkpoint> {
        self.state.lock().unwrap().resume.take()
    }

    fn recorded_order(&self) -> Option<Vec<Vec<StmtId>>> {
        self.state.lock().unwrap().order.take()
    }

    fn finish(
        &self,
        _: Result<&[(String, Value)], &RunError>,
    ) -> BoxFuture<'static, Result<(), String>> {
        let mut s = self.state.lock().unwrap();
        if !s.dead {
            s.finished = true;
        }
        Box::pin(async { Ok(()) })
    }
}

fn options(seed: u64, journal: Option<Arc<Journal>>, interrupt: Option<Interrupt>) -> RunOptions {
    RunOptions {
        run_id: format!("cpl-{seed}"),
        seed,
        trace: true,
        schedule: Schedule::Random(seed | 1),
        journal: journal.map(|j| j as Arc<dyn RunJournal>),
        remote: None,
        park_after: None,
        run_uid: Some(format!("cpl-{seed}")),
        interrupt,
    }
}

/// What the kills and resumes of all cases amounted to.
#[derive(Debug, Default)]
struct Stats {
    interrupts: usize,
    drops: usize,
    ended_dead: usize,
    restores: usize,
    replays: usize,
    taken: usize,
    checked: usize,
    trues: usize,
    after_restore: usize,
}

/// Runs the workflow of `engine` with a [`Journal`], killed up to `kills`
/// times at random points and resumed until it finishes; the outcome and
/// the journal.
fn crashed_run(
    rt: &tokio::runtime::Runtime,
    engine: &troupe_runtime::Engine,
    inputs: &[Value],
    seed: u64,
    rng: &mut Rng,
    kills: usize,
    stats: &mut Stats,
) -> Result<(troupe_runtime::RunOutcome, Arc<Journal>), RunError> {
    let n = engine.workflow().lifelines.len();
    let journal = Arc::new(Journal::new(n, 1 + rng.below(4) as u64));
    let mut killed = 0;
    loop {
        let first = killed == 0;
        let last = killed >= kills || (killed > 0 && rng.chance(1, 4));
        // Events this incarnation records before it dies: the first few
        // dozen cover most runs, and the later ones die sooner.
        let kill_at = (!last).then(|| 1 + rng.below(40 >> killed.min(3)));
        let interrupt = Interrupt::new(Duration::ZERO);
        let notify = Arc::new(tokio::sync::Notify::new());
        let how = if rng.chance(1, 2) {
            Kill::Interrupt(interrupt.clone())
        } else {
            Kill::Drop(notify.clone())
        };
        let replay = first || rng.chance(1, 4);
        journal.crash_and_resume(rng, replay, kill_at.map(|k| (k, how)));
        if !first {
            if journal.state.lock().unwrap().from_checkpoint {
                stats.restores += 1;
            } else {
                stats.replays += 1;
            }
        }
        let run = engine.run(
            inputs.to_vec(),
            options(seed, Some(journal.clone()), Some(interrupt)),
        );
        let result = rt.block_on(async {
            tokio::select! {
                r = run => Some(r),
                () = notify.notified() => None,
            }
        });
        let dead = journal.state.lock().unwrap().dead;
        match result {
            Some(Ok(outcome)) if !dead => return Ok((outcome, journal)),
            Some(Err(RunError::Interrupted { .. })) => stats.interrupts += 1,
            None => stats.drops += 1,
            // Killed where it does not wait (nor step again), it may end
            // before it notices: what it did after the kill is lost all
            // the same.
            Some(Ok(_)) => stats.ended_dead += 1,
            Some(Err(e)) => return Err(e),
        }
        killed += 1;
    }
}

#[test]
fn killed_and_resumed_runs_take_the_decisions_of_an_uninterrupted_run() {
    let seeds = Seeds::new(
        "killed_and_resumed_runs_take_the_decisions_of_an_uninterrupted_run",
        300,
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut stats = Stats::default();
    for seed in seeds.iter() {
        let hint = repeat_hint(seed);
        let g = generate(seed, true);
        let src = &g.source;
        let has_par = src.contains("par {");
        let engine = EngineBuilder::from_source(src)
            .unwrap_or_else(|e| panic!("{e:?}\n{src}\n{hint}"))
            .llm(Arc::new(Model))
            .build()
            .unwrap_or_else(|e| panic!("{e}\n{src}\n{hint}"));
        let w = engine.workflow();
        let n = w.lifelines.len();
        let types = &engine.program().types;
        let lanes = troupe_project::Lanes::new(w);
        let lane = |s: StmtId| lanes.of(s);

        // The uninterrupted run.
        let whole = rt
            .block_on(engine.run(g.inputs.clone(), options(seed, None, None)))
            .unwrap_or_else(|e| panic!("{e}\n{src}\n{hint}"));
        let reference = whole.trace.as_ref().unwrap().execution(n);

        // The same run, killed and resumed, twice with other kills.
        let mut rng = Rng::new(seed ^ 0xc4a5);
        for trial in 0..2 {
            let at = format!("trial {trial}");
            let (outcome, journal) =
                crashed_run(&rt, &engine, &g.inputs, seed, &mut rng, 4, &mut stats)
                    .unwrap_or_else(|e| panic!("{at}: the resumed run failed: {e}\n{src}\n{hint}"));
            assert_eq!(
                outcome.results, whole.results,
                "{at}: the resumed run returned other results\n{src}\n{hint}"
            );
            let exec = journal.execution(n);
            let s = journal.state.lock().unwrap();
            assert!(
                s.finished,
                "{at}: the run's end was not recorded\n{src}\n{hint}"
            );
            assert!(
                s.mismatches.is_empty(),
                "{at}: a resumed run replayed other events than were recorded: {:#?}\n{src}\n{hint}",
                s.mismatches
            );
            stats.taken += s.taken;
            engine
                .verify_execution("resumed", &exec, false)
                .unwrap_or_else(|e| panic!("{at}: {e}\n{src}\n{hint}"));
            if !has_par {
                for (l, (got, want)) in exec.words.iter().zip(&reference.words).enumerate() {
                    let decisions = |w: &[Event]| -> Vec<Event> {
                        w.iter()
                            .filter(|e| matches!(e, Event::Decide { .. }))
                            .cloned()
                            .collect()
                    };
                    assert_eq!(
                        decisions(got),
                        decisions(want),
                        "{at}: L{l} decided otherwise than the uninterrupted run\n{src}\n{hint}"
                    );
                    assert_eq!(got, want, "{at}: L{l}'s word differs\n{src}\n{hint}");
                }
            }
            // Every causal decision of the history, against the reference;
            // which of them a run restored from a checkpoint took.
            let values = guard_values(w, types, &exec, &g.inputs, &lane)
                .unwrap_or_else(|e| panic!("{at}: reference: {e}\n{src}\n{hint}"));
            let mut restored: Vec<Vec<bool>> = vec![Vec::new(); n];
            for ((l, _), r) in s.log.iter().zip(&s.restored) {
                restored[l.0 as usize].push(*r);
            }
            for v in &values {
                assert_eq!(
                    v.recorded, v.value,
                    "{at}: decision of s{} at L{} event {}: recorded {}, the reference says {}\n{src}\n{hint}",
                    v.stmt.0, v.lifeline.0, v.event, v.recorded, v.value
                );
                stats.checked += 1;
                stats.trues += usize::from(v.value);
                stats.after_restore += usize::from(restored[v.lifeline.0 as usize][v.event]);
            }
        }
    }
    eprintln!("{} workflows x 2 crashed runs: {stats:?}", seeds.cases);
    if seeds.cases >= 100 {
        let s = &stats;
        assert!(
            s.interrupts >= 50 && s.drops >= 50 && s.restores >= 100 && s.replays >= 20,
            "too few kills and resumes to mean much: {s:?}"
        );
        assert!(s.taken >= 20, "too few recorded results taken: {s:?}");
        assert!(
            s.after_restore >= 200 && s.trues >= 100 && s.checked - s.trues >= 100,
            "too few causal decisions after a restore: {s:?}"
        );
    }
}
