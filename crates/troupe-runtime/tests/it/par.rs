//! `par` and `coregion` run: a lifeline in several branches runs its parts
//! concurrently (Lead below has three), messages of one branch stay on its
//! channels, the coregion's receiver takes its messages in arrival order,
//! and under every schedule the run returns the same results and is a
//! member of ⟦P⟧ (monitor, and offline membership with and without
//! control events).

use troupe_msc::{MemberOptions, Semantics};
use troupe_runtime::{EngineBuilder, RunOptions, Schedule};

/// Three branches, one lifeline (A) in all of them, and a coregion.
const SRC: &str = include_str!("../data/fan.troupe");

#[test]
fn a_fan_out_with_parts_at_one_lifeline_runs_under_every_schedule() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let b = EngineBuilder::from_source(SRC).unwrap_or_else(|d| panic!("{d:?}"));
    let program = b.program().clone();
    let engine = b.build().unwrap();
    let sem = Semantics::new(&program, &program.workflows[0]).unwrap();
    for seed in 0..200u64 {
        let schedule = if seed == 0 {
            Schedule::RunToBlock
        } else {
            Schedule::Random(seed)
        };
        let out = rt
            .block_on(engine.run(
                vec![troupe_check::Value::Int(3)],
                RunOptions {
                    schedule,
                    ..RunOptions::default()
                },
            ))
            .unwrap();
        assert_eq!(out.results[0].1, troupe_check::Value::Int(4 + 6 + 13));
        let trace = out.trace.unwrap();
        engine.verify("r", &trace).unwrap();
        let exec = trace.execution(engine.workflow().lifelines.len());
        for control in [true, false] {
            sem.check(
                &exec,
                &MemberOptions {
                    control,
                    prefix: false,
                },
            )
            .unwrap_or_else(|e| panic!("{seed} {control}: {e}"));
        }
    }
}

/// A model whose reviewers answer after a number of scheduler turns of
/// their own, so that the test decides in which order they finish.
#[derive(Debug)]
struct Paced {
    turns: [(&'static str, u32); 3],
}

impl troupe_llm::LlmBackend for Paced {
    fn describe(&self) -> String {
        "paced".into()
    }

    fn call<'a>(
        &'a self,
        request: &'a troupe_llm::LlmRequest,
    ) -> troupe_llm::BoxFuture<'a, Result<troupe_llm::LlmAnswer, troupe_llm::LlmError>> {
        let turns = self
            .turns
            .iter()
            .find(|(a, _)| *a == request.key.action)
            .map_or(0, |(_, n)| *n);
        let values = match request.outputs.len() {
            2 => {
                let troupe_check::Type::Enum(verdict) = request.outputs[0].ty else {
                    panic!("a verdict first");
                };
                vec![
                    troupe_check::Value::Enum(verdict, 0),
                    troupe_check::Value::text(format!("notes of {}", request.key.action)),
                ]
            }
            _ => vec![troupe_check::Value::text("merged")],
        };
        Box::pin(async move {
            for _ in 0..turns {
                tokio::task::yield_now().await;
            }
            Ok(troupe_llm::LlmAnswer {
                values,
                tool_calls: Vec::new(),
                model: "paced".into(),
                usage: None,
                latency: std::time::Duration::ZERO,
                attempts: 1,
                detail: Default::default(),
            })
        })
    }
}

#[test]
fn a_coregion_receives_in_arrival_order() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let src = include_str!("../../../../examples/fan_out_review.troupe");
    for (turns, order) in [
        ([30, 0, 10], ["Facts", "Tone", "Style"]),
        ([0, 20, 40], ["Style", "Facts", "Tone"]),
        ([40, 20, 0], ["Tone", "Facts", "Style"]),
    ] {
        let model = Paced {
            turns: [
                ("check_style", turns[0]),
                ("check_facts", turns[1]),
                ("check_tone", turns[2]),
            ],
        };
        let engine = EngineBuilder::from_source(src)
            .unwrap()
            .llm(std::sync::Arc::new(model))
            .build()
            .unwrap();
        let out = rt
            .block_on(engine.run(
                vec![troupe_check::Value::text("a draft")],
                RunOptions::default(),
            ))
            .unwrap();
        let trace = out.trace.unwrap();
        engine.verify("r", &trace).unwrap();
        let w = engine.workflow();
        let editor = w.lifelines.iter().position(|l| l.name == "Editor").unwrap();
        let received: Vec<&str> = trace
            .entries
            .iter()
            .filter(|e| e.lifeline.0 as usize == editor)
            .filter_map(|e| match &e.event {
                troupe_msc::Event::Recv { from, .. } => Some(w.lifeline(*from).name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(received, order, "reviewers paced {turns:?}");
    }
}
