//! The online monitor against the offline membership check, two independent
//! implementations of control-mode ⟦P⟧: on random workflows, every member
//! (from the bounded enumeration) is accepted online, each prefix too, and
//! for mutated executions — a flipped decision, a dropped or repeated event,
//! two events swapped, a message relabelled — both agree on the verdict.

use proptest::prelude::*;
use troupe_check::ir::{Program, StmtId};
use troupe_msc::{EnumOptions, Event, Execution, MemberOptions, Message, Monitor, Semantics};
use troupe_project::testing::arb_program;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn online(program: &Program, exec: &Execution, prefix: bool) -> bool {
    let w = &program.workflows[0];
    let mut m = Monitor::new(program, w).unwrap();
    let Some(events) = exec.linearize() else {
        return false;
    };
    events.iter().all(|(l, e)| m.event(*l, e).is_ok()) && m.finish(prefix).is_ok()
}

fn offline(sem: &Semantics, exec: &Execution, prefix: bool) -> bool {
    sem.check(
        exec,
        &MemberOptions {
            control: true,
            prefix,
        },
    )
    .is_ok()
}

/// Mutants of `exec`, chosen by `seed`.
fn mutants(exec: &Execution, seed: u64) -> Vec<Execution> {
    let mut out = Vec::new();
    let n = exec.words.len();
    let pick = |k: u64, len: usize| {
        (seed
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(k as u32) as usize)
            % len.max(1)
    };
    for (l, word) in exec.words.iter().enumerate() {
        if word.is_empty() {
            continue;
        }
        let i = pick(l as u64, word.len());
        // A decision flipped at one place only.
        let mut x = exec.clone();
        for e in x.words[l].iter_mut().skip(i) {
            let flipped = match e {
                Event::Decide { decision, .. } => {
                    *decision = !*decision;
                    true
                }
                Event::Send {
                    msg: Message::Control { decision, .. },
                    ..
                }
                | Event::Recv {
                    msg: Message::Control { decision, .. },
                    ..
                } => {
                    *decision = !*decision;
                    true
                }
                _ => false,
            };
            if flipped {
                break;
            }
        }
        out.push(x);
        // An event dropped.
        let mut x = exec.clone();
        x.words[l].remove(i);
        out.push(x);
        // An event repeated.
        let mut x = exec.clone();
        let e = x.words[l][i].clone();
        x.words[l].insert(i, e);
        out.push(x);
        // Two neighbours swapped.
        if i + 1 < word.len() {
            let mut x = exec.clone();
            x.words[l].swap(i, i + 1);
            out.push(x);
        }
        // A message relabelled with another statement.
        let mut x = exec.clone();
        if let Event::Send {
            msg: Message::Data { stmt, .. },
            ..
        }
        | Event::Recv {
            msg: Message::Data { stmt, .. },
            ..
        }
        | Event::Act { stmt, .. } = &mut x.words[l][i]
        {
            *stmt = StmtId(stmt.0 ^ 1);
            out.push(x);
        }
    }
    let _ = n;
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_monitor_agrees_with_membership(program in arb_program(), seed in any::<u64>()) {
        let w = &program.workflows[0];
        let sem = Semantics::new(&program, w).unwrap();
        let e = sem.enumerate(&EnumOptions { unroll: 2, control: true, limit: 40 });
        for x in &e.executions {
            prop_assert!(online(&program, x, false), "a member was refused online: {x:?}");
            // Every prefix (each word cut at the same fraction) is a prefix.
            for cut in [0usize, 1, 2] {
                let mut p = x.clone();
                for word in &mut p.words {
                    let keep = word.len() * cut / 3;
                    word.truncate(keep);
                }
                if offline(&sem, &p, true) {
                    prop_assert!(online(&program, &p, true), "a prefix was refused online");
                }
            }
            for m in mutants(x, seed) {
                let (on, off) = (online(&program, &m, false), offline(&sem, &m, false));
                prop_assert_eq!(on, off, "online {} offline {} on {:?}", on, off, m);
            }
        }
        // Splices: one lifeline's word from another member. Each word then
        // follows some branch, but the lifelines may disagree on which: only
        // the decisions carried by control messages tell.
        for (i, x) in e.executions.iter().enumerate().take(8) {
            for y in e.executions.iter().skip(i + 1).take(8) {
                for l in 0..x.words.len() {
                    let mut m = x.clone();
                    m.words[l] = y.words[l].clone();
                    let (on, off) = (online(&program, &m, false), offline(&sem, &m, false));
                    prop_assert_eq!(on, off, "splice: online {} offline {} on {:?}", on, off, m);
                }
            }
        }
    }
}

#[test]
fn a_decision_the_lifelines_did_not_follow_is_caught_at_once() {
    let src = r#"
workflow w(go: Bool @ A) {
  lifelines A, B, C
  act B: x = 1
  act C: z = 2
  if go @ A {
    msg B(x) -> C(y)
  } else {
    msg C(z) -> B(y)
  }
}
"#;
    let program = troupe_check::check_text(src).0.unwrap();
    let w = &program.workflows[0];
    let sem = Semantics::new(&program, w).unwrap();
    let e = sem.enumerate(&EnumOptions {
        unroll: 1,
        control: true,
        limit: 10,
    });
    assert_eq!(e.executions.len(), 2);
    for x in &e.executions {
        // A decides the other branch and tells B and C so, but they run
        // the branch they ran.
        let mut lie = x.clone();
        for word in &mut lie.words {
            for ev in word.iter_mut() {
                match ev {
                    Event::Decide { decision, .. }
                    | Event::Send {
                        msg: Message::Control { decision, .. },
                        ..
                    }
                    | Event::Recv {
                        msg: Message::Control { decision, .. },
                        ..
                    } => *decision = !*decision,
                    _ => {}
                }
            }
        }
        assert!(online(&program, x, false));
        assert!(!online(&program, &lie, false));
        assert!(!offline(&sem, &lie, false));
        // Without decisions, the erasure of the lie is a run of the chart.
        assert!(
            sem.check(&lie.erase_control(), &MemberOptions::default())
                .is_ok()
        );
    }
}

/// The monitor keeps a fingerprint of each message's values, not the
/// values: a receive of other values than were sent is still caught, also
/// after a snapshot and restore, and values `==` calls equal (`0.0` and
/// `-0.0`, NaN and NaN) are never told apart.
#[test]
fn a_receive_of_other_values_than_were_sent_is_caught() {
    use troupe_check::Value;
    let src = r#"
workflow w(x: Float @ A) {
  lifelines A, B
  msg A(x) -> B(y)
}
"#;
    let program = troupe_check::check_text(src).0.unwrap();
    let w = &program.workflows[0];
    let (a, b) = (
        troupe_check::ir::LifelineId(0),
        troupe_check::ir::LifelineId(1),
    );
    let data = |v: f64| Message::Data {
        stmt: StmtId(0),
        values: Some(vec![Value::Float(v)]),
    };
    let stmt = match &w.body.stmts[0].kind {
        troupe_check::ir::StmtKind::Msg { .. } => w.body.stmts[0].id,
        other => panic!("{other:?}"),
    };
    let data = |v: f64| match data(v) {
        Message::Data { values, .. } => Message::Data { stmt, values },
        m => m,
    };
    let verdict = |sent: f64, got: f64, restore: bool| {
        let mut m = Monitor::new(&program, w).unwrap();
        m.event(
            a,
            &Event::Send {
                to: b,
                msg: data(sent),
            },
        )
        .unwrap();
        if restore {
            m = m.restore(&m.snapshot()).unwrap();
        }
        m.event(
            b,
            &Event::Recv {
                from: a,
                msg: data(got),
            },
        )
        .and_then(|()| m.finish(false))
        .is_ok()
    };
    for restore in [false, true] {
        assert!(verdict(1.5, 1.5, restore));
        assert!(verdict(0.0, -0.0, restore));
        assert!(verdict(f64::NAN, -f64::NAN, restore));
        assert!(!verdict(1.5, 2.5, restore), "restore {restore}");
        assert!(!verdict(0.0, f64::NAN, restore), "restore {restore}");
    }
    // Without values on either side, only the statement is checked.
    let mut m = Monitor::new(&program, w).unwrap();
    let abstract_msg = Message::Data { stmt, values: None };
    m.event(
        a,
        &Event::Send {
            to: b,
            msg: abstract_msg,
        },
    )
    .unwrap();
    assert!(
        m.event(
            b,
            &Event::Recv {
                from: a,
                msg: data(7.0)
            }
        )
        .is_ok()
    );
}
