//! ⟦P⟧ on hand-built workflows: enumeration, membership, simulation.

use troupe_check::Value;
use troupe_check::ir::{BinaryOp, LifelineId, StmtId};
use troupe_check::types::Type;
use troupe_msc::{
    Decisions, EnumOptions, Event, Execution, MemberOptions, Message, Semantics, SimOptions,
    simulate, validate, validate_complete,
};
use troupe_project::testing::{Builder, reviewed_plan};

const DATA: MemberOptions = MemberOptions {
    control: false,
    prefix: false,
};
const CONTROL: MemberOptions = MemberOptions {
    control: true,
    prefix: false,
};

#[test]
fn reviewed_plan_enumeration() {
    let program = reviewed_plan();
    let w = &program.workflows[0];
    let sem = Semantics::new(&program, w).unwrap();
    for control in [false, true] {
        let e = sem.enumerate(&EnumOptions {
            unroll: 2,
            control,
            limit: 100,
        });
        assert_eq!(e.executions.len(), 3, "0, 1 or 2 revisions");
        assert!(!e.truncated);
        for x in &e.executions {
            validate_complete(x, 4).unwrap();
            sem.check(
                x,
                &MemberOptions {
                    control,
                    prefix: false,
                },
            )
            .unwrap();
            if control {
                sem.check(&x.erase_control(), &DATA).unwrap();
                // Control events are skipped when checking the erasure.
                sem.check(x, &DATA).unwrap();
            }
        }
    }
}

fn describe(e: &Execution) -> String {
    e.words
        .iter()
        .enumerate()
        .map(|(l, w)| {
            format!(
                "{l}: {}",
                w.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn reviewed_plan_one_revision_words() {
    let program = reviewed_plan();
    let sem = Semantics::new(&program, &program.workflows[0]).unwrap();
    let e = sem.enumerate(&EnumOptions {
        unroll: 1,
        control: true,
        limit: 100,
    });
    let one = e.executions.iter().max_by_key(|x| x.len()).unwrap();
    let tag = sem.projection().constructs[0].tag.to_string();
    insta::assert_snapshot!(describe(one).replace(&tag, "κTAG"));
}

#[test]
fn membership_names_the_first_misfit() {
    let program = reviewed_plan();
    let sem = Semantics::new(&program, &program.workflows[0]).unwrap();
    let e = sem.enumerate(&EnumOptions {
        unroll: 1,
        control: false,
        limit: 100,
    });
    let one = e.executions.iter().max_by_key(|x| x.len()).unwrap().clone();

    // The planner skips re-planning in the loop.
    let mut bad = one.clone();
    let planner = &mut bad.words[1];
    let i = planner
        .iter()
        .position(|e| matches!(e, Event::Act { stmt, .. } if *stmt == StmtId(7)))
        .unwrap();
    planner.remove(i);
    let err = sem.check(&bad, &DATA).unwrap_err();
    assert_eq!(err.lifeline, Some(LifelineId(1)));
    assert_eq!(err.index, i);
    insta::assert_snapshot!("skipped_act", err.to_string());

    // The user receives the final plan twice.
    let mut bad = one.clone();
    let last = bad.words[0].last().unwrap().clone();
    bad.words[0].push(last);
    let err = sem.check(&bad, &DATA).unwrap_err();
    insta::assert_snapshot!("extra_receive", err.to_string());

    // The reviewer's last action is missing; as a prefix that is fine.
    let mut prefix = one.clone();
    prefix.words[2].pop();
    prefix.words[0].pop();
    prefix.words[2].pop();
    assert!(sem.check(&prefix, &DATA).is_err());
    sem.check(
        &prefix,
        &MemberOptions {
            control: false,
            prefix: true,
        },
    )
    .unwrap();

    // Concrete values must agree between send and receive.
    let mut bad = one.clone();
    if let Some(Event::Send {
        msg: Message::Data { values, .. },
        ..
    }) = bad.words[0].get_mut(0)
    {
        *values = Some(vec![Value::text("a")]);
    }
    if let Some(Event::Recv {
        msg: Message::Data { values, .. },
        ..
    }) = bad.words[1].get_mut(0)
    {
        *values = Some(vec![Value::text("b")]);
    }
    assert!(validate(&bad, 4).is_err());
    let err = sem.check(&bad, &DATA).unwrap_err();
    insta::assert_snapshot!("payload_mismatch", err.to_string());
}

#[test]
fn control_membership_follows_the_owner() {
    let program = reviewed_plan();
    let sem = Semantics::new(&program, &program.workflows[0]).unwrap();
    let e = sem.enumerate(&EnumOptions {
        unroll: 1,
        control: true,
        limit: 100,
    });
    let one = e.executions.iter().max_by_key(|x| x.len()).unwrap().clone();
    // Flip the owner's first decision: the words no longer fit.
    let mut bad = one.clone();
    for ev in bad.words[2].iter_mut() {
        if let Event::Decide { decision, .. } = ev {
            *decision = !*decision;
            break;
        }
    }
    let err = sem.check(&bad, &CONTROL).unwrap_err();
    assert_eq!(err.lifeline, Some(LifelineId(2)));
    insta::assert_snapshot!(
        err.to_string()
            .replace(&sem.projection().constructs[0].tag.to_string(), "κTAG")
    );
}

#[test]
fn simulated_runs_are_members() {
    let program = reviewed_plan();
    let w = &program.workflows[0];
    let sem = Semantics::new(&program, w).unwrap();
    for seed in 0..50 {
        let opts = SimOptions {
            seed,
            decisions: Decisions::Random { seed: seed * 7 + 1 },
            loop_bound: Some(4),
            max_steps: 10_000,
        };
        let run = simulate(&program, w, sem.projection(), &[Value::text("trip")], &opts).unwrap();
        assert!(run.completed());
        validate_complete(&run.execution, 4).unwrap();
        sem.check(&run.execution, &CONTROL).unwrap();
        sem.check(&run.execution.erase_control(), &DATA).unwrap();
        for steps in 0..run.schedule.len() {
            sem.check(
                &run.prefix(steps),
                &MemberOptions {
                    control: true,
                    prefix: true,
                },
            )
            .unwrap();
        }
    }
}

/// Without control events, which branch was taken is read off the words, even
/// when a lifeline's next event belongs to a later round of an outer loop.
#[test]
fn data_membership_with_nested_loops() {
    let mut b = Builder::new("nested_loops");
    let a = b.lifeline("A");
    let bb = b.lifeline("B");
    let c = b.lifeline("C");
    let na = b.input("n", a, Type::Int);
    let nb = b.input("n", bb, Type::Int);
    let nc = b.input("n", c, Type::Int);
    let lt = |b: &Builder, v, k| Builder::binary(BinaryOp::Lt, b.v(v), Builder::int(k));
    let body = vec![b.while_(
        a,
        lt(&b, na, 3),
        |b| {
            vec![
                b.while_(
                    bb,
                    lt(b, nb, 2),
                    |b| vec![b.msg(bb, c, &[(nb, nc)])],
                    |_| vec![],
                ),
                b.msg(a, c, &[(na, nc)]),
            ]
        },
        |_| vec![],
    )];
    let program = b.finish(body);
    let sem = Semantics::new(&program, &program.workflows[0]).unwrap();
    let e = sem.enumerate(&EnumOptions {
        unroll: 3,
        control: false,
        limit: 1000,
    });
    assert!(e.executions.len() > 20);
    for x in &e.executions {
        sem.check(x, &DATA).unwrap();
    }
}

/// Long runs are checked: 200 000 loop rounds, with and without control
/// events, and as a prefix (how fast is `troupe bench verify`'s business).
#[test]
fn long_runs_are_checked() {
    let mut b = Builder::new("long");
    let a = b.lifeline("A");
    let c = b.lifeline("C");
    let na = b.input("n", a, Type::Int);
    let nc = b.input("n", c, Type::Int);
    let body = vec![b.while_(
        a,
        Builder::binary(BinaryOp::Lt, b.v(na), Builder::int(200_000)),
        |b| {
            vec![
                b.msg(a, c, &[(na, nc)]),
                b.act(
                    a,
                    vec![Some(na)],
                    troupe_check::ir::Call::Expr(Builder::binary(
                        BinaryOp::Add,
                        b.v(na),
                        Builder::int(1),
                    )),
                ),
            ]
        },
        |b| vec![b.msg(c, a, &[(nc, na)])],
    )];
    let program = b.finish(body);
    let w = &program.workflows[0];
    let sem = Semantics::new(&program, w).unwrap();
    let opts = SimOptions {
        seed: 1,
        decisions: Decisions::Evaluate,
        loop_bound: None,
        max_steps: 10_000_000,
    };
    let run = simulate(
        &program,
        w,
        sem.projection(),
        &[Value::Int(0), Value::Int(0)],
        &opts,
    )
    .unwrap();
    assert_eq!(run.execution.words[1].len(), 2 * 200_000 + 2);
    sem.check(&run.execution, &CONTROL).unwrap();
    sem.check(&run.execution.erase_control(), &DATA).unwrap();
    sem.check(
        &run.execution,
        &MemberOptions {
            control: true,
            prefix: true,
        },
    )
    .unwrap();
    // One round fewer at the receiver is not a member.
    let mut short = run.execution.clone();
    short.words[1].truncate(2 * 199_999 + 2);
    assert!(sem.check(&short, &CONTROL).is_err());
}
