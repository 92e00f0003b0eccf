//! Membership: whether a given tuple of local words is in ⟦P⟧ (or a
//! prefix of a member). The graph is walked against the words with one
//! cursor per lifeline; a branch is refuted as soon as a lifeline that must
//! act in it has a next event from elsewhere, and what stays ambiguous is
//! explored depth-first with the visited states memoised.

use super::{Choice, MemberOptions, Node, NotMember, Semantics};
use crate::event::{Event, Execution, Message};
use crate::validity::{Invalid, validate_lanes};
use std::collections::HashSet;
use troupe_check::ir::LifelineId;
use troupe_project::ConstructKind;

impl Semantics {
    /// Decides whether `exec` is in ⟦P⟧ (or, with `prefix`, a prefix of a member).
    pub fn check(&self, exec: &Execution, opts: &MemberOptions) -> Result<(), Box<NotMember>> {
        let n = self.lifelines.len();
        let lanes = &self.projection.lanes;
        if let Err(e) = validate_lanes(exec, n, &|s| lanes.of(s)) {
            return Err(Box::new(self.invalid(exec, e)));
        }
        let w = Walk {
            sem: self,
            exec,
            opts: *opts,
        };
        w.run()
    }

    fn invalid(&self, exec: &Execution, e: Invalid) -> NotMember {
        let at = match &e {
            Invalid::WrongArity { .. } => None,
            Invalid::BadPeer {
                lifeline, index, ..
            }
            | Invalid::Unmatched {
                lifeline, index, ..
            }
            | Invalid::PayloadMismatch {
                lifeline, index, ..
            }
            | Invalid::Cycle { lifeline, index }
            | Invalid::Unreceived {
                lifeline, index, ..
            } => Some((*lifeline, *index)),
        };
        NotMember {
            lifeline: at.map(|a| a.0),
            index: at.map_or(0, |a| a.1),
            event: at.and_then(|(l, i)| exec.word(l).get(i).cloned()),
            event_text: at
                .and_then(|(l, i)| exec.word(l).get(i))
                .map(|e| e.describe(&self.lifelines))
                .unwrap_or_default(),
            expected: format!("not a valid execution: {e}"),
            lifeline_name: at.map(|a| self.name(a.0)).unwrap_or_default(),
        }
    }
}

/// A pending alternative of the membership search.
struct Pending {
    pc: usize,
    /// Per lifeline, the position after its last event taken (events the
    /// check does not look at here are skipped when read, see `Walk::at`).
    cur: Vec<usize>,
    consumed: usize,
    forced: Option<bool>,
    /// Per loop, `consumed` when its current entry last chose ⊤.
    last: Vec<usize>,
    /// The `par` regions being walked, outermost first.
    frames: Vec<ParFrame>,
}

/// A `par` being walked: its branches are walked one after another, each
/// from the positions where the region began, reading only the events of
/// its own statements; at the end every lifeline's events of the region
/// must be those the branches took.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ParFrame {
    par: usize,
    branch: usize,
    entry: Vec<usize>,
    /// Per branch walked, where it left each lifeline.
    ends: Vec<Vec<usize>>,
}

/// A pre-order range of statements: the events a walk looks at.
type Range = (u32, u32);

const EVERYTHING: Range = (0, u32::MAX);

type Visited = HashSet<(usize, Vec<usize>, Vec<ParFrame>)>;

/// Cursor updates of a decision (lifeline, new position), and how many
/// events they take.
type Updates = (Vec<(usize, usize)>, usize);

struct Failure {
    progress: usize,
    lifeline: LifelineId,
    index: usize,
    expected: String,
}

struct Walk<'a> {
    sem: &'a Semantics,
    exec: &'a Execution,
    opts: MemberOptions,
}

enum Outcome {
    Accept,
    Fail(Option<Failure>),
}

impl Walk<'_> {
    fn word(&self, l: LifelineId) -> &[Event] {
        self.exec.word(l)
    }

    /// Whether the check looks at `e` in range `r`: control events are
    /// invisible when checking the erasure, and inside a branch of a `par`
    /// the events of other statements belong to other branches (or come
    /// after the region).
    fn visible(&self, e: &Event, r: Range) -> bool {
        (self.opts.control || !e.is_control()) && {
            let p = self.sem.pre(e.stmt());
            r.0 <= p && p < r.1
        }
    }

    /// The first position at or after `pos` that the check looks at in
    /// range `r`, and the event there.
    fn at(&self, l: LifelineId, mut pos: usize, r: Range) -> (usize, Option<&Event>) {
        let w = self.word(l);
        while let Some(e) = w.get(pos) {
            if self.visible(e, r) {
                return (pos, Some(e));
            }
            pos += 1;
        }
        (pos, None)
    }

    fn relevant(&self) -> usize {
        self.exec
            .words
            .iter()
            .map(|w| {
                if self.opts.control {
                    w.len()
                } else {
                    w.iter().filter(|e| !e.is_control()).count()
                }
            })
            .sum()
    }

    fn run(&self) -> Result<(), Box<NotMember>> {
        let n = self.sem.lifelines.len();
        let total = self.relevant();
        let mut stack = vec![Pending {
            pc: 0,
            cur: vec![0; n],
            consumed: 0,
            forced: None,
            last: vec![usize::MAX; self.sem.loops],
            frames: Vec::new(),
        }];
        let mut visited: Visited = HashSet::new();
        let mut best: Option<Failure> = None;
        while let Some(p) = stack.pop() {
            match self.path(p, total, &mut stack, &mut visited) {
                Outcome::Accept => return Ok(()),
                Outcome::Fail(Some(f)) => {
                    if best.as_ref().is_none_or(|b| f.progress > b.progress) {
                        best = Some(f);
                    }
                }
                Outcome::Fail(None) => {}
            }
        }
        let f = best.unwrap_or(Failure {
            progress: 0,
            lifeline: LifelineId(0),
            index: 0,
            expected: "no path of the workflow fits".to_owned(),
        });
        Err(Box::new(NotMember {
            lifeline: Some(f.lifeline),
            index: f.index,
            event: self.word(f.lifeline).get(f.index).cloned(),
            event_text: self
                .word(f.lifeline)
                .get(f.index)
                .map(|e| e.describe(&self.sem.lifelines))
                .unwrap_or_default(),
            expected: f.expected,
            lifeline_name: self.sem.name(f.lifeline),
        }))
    }

    /// Expects the next event of `l` (at `pos`) to satisfy `ok`; returns the
    /// position after it. A frozen lifeline (prefix mode, word ended) accepts
    /// anything and stays where it is.
    fn expect(
        &self,
        l: LifelineId,
        pos: usize,
        r: Range,
        progress: usize,
        ok: impl Fn(&Event) -> bool,
        what: impl Fn() -> String,
    ) -> Result<usize, Failure> {
        match self.at(l, pos, r) {
            (_, None) if self.opts.prefix => Ok(pos),
            (at, Some(e)) if ok(e) => Ok(at + 1),
            (at, _) => Err(Failure {
                progress,
                lifeline: l,
                index: at,
                expected: what(),
            }),
        }
    }

    /// The range a walk inside `frames` looks at.
    fn range(&self, frames: &[ParFrame]) -> Range {
        frames
            .last()
            .and_then(|f| self.sem.pars.get(f.par)?.branches.get(f.branch))
            .map_or(EVERYTHING, |b| (b.lo, b.hi))
    }

    /// At the end of a `par`: each lifeline leaves the region after the
    /// last event any branch took, and every event of the enclosing range
    /// before that must be one a branch took (before the branch ended).
    fn join(&self, frame: &ParFrame, outer: Range, consumed: usize) -> Result<Vec<usize>, Failure> {
        let Some(par) = self.sem.pars.get(frame.par) else {
            return Err(self.malformed(consumed));
        };
        let mut out = frame.entry.clone();
        for (l, entry) in frame.entry.iter().enumerate() {
            let end = frame
                .ends
                .iter()
                .filter_map(|e| e.get(l).copied())
                .max()
                .unwrap_or(*entry);
            let lifeline = LifelineId(l as u32);
            for q in *entry..end {
                let Some(e) = self.word(lifeline).get(q) else {
                    break;
                };
                if !self.visible(e, outer) {
                    continue;
                }
                let p = self.sem.pre(e.stmt());
                let fits =
                    par.branches.iter().zip(&frame.ends).any(|(b, ends)| {
                        b.lo <= p && p < b.hi && ends.get(l).is_some_and(|&x| q < x)
                    });
                if !fits {
                    return Err(Failure {
                        progress: consumed,
                        lifeline,
                        index: q,
                        expected: "its parts of the `par` had not all ended".to_owned(),
                    });
                }
            }
            out[l] = end.max(*entry);
        }
        Ok(out)
    }

    fn malformed(&self, progress: usize) -> Failure {
        self.nowhere(progress)
    }

    fn path(
        &self,
        p: Pending,
        total: usize,
        stack: &mut Vec<Pending>,
        visited: &mut Visited,
    ) -> Outcome {
        let Pending {
            mut pc,
            mut cur,
            mut consumed,
            mut forced,
            mut last,
            mut frames,
        } = p;
        let sem = self.sem;
        let mut range = self.range(&frames);
        loop {
            if self.opts.prefix && consumed >= total {
                return Outcome::Accept;
            }
            let Some(node) = sem.nodes.get(pc) else {
                if consumed >= total {
                    return Outcome::Accept;
                }
                let (l, index) = (0..cur.len())
                    .map(|l| (l, self.at(LifelineId(l as u32), cur[l], EVERYTHING)))
                    .find(|(_, (_, e))| e.is_some())
                    .map_or((0, 0), |(l, (i, _))| (l, i));
                return Outcome::Fail(Some(Failure {
                    progress: consumed,
                    lifeline: LifelineId(l as u32),
                    index,
                    expected: "the workflow has ended".to_owned(),
                }));
            };
            match node {
                Node::ParFork(p) => {
                    let Some(par) = sem.pars.get(*p) else {
                        return Outcome::Fail(None);
                    };
                    match par.branches.first() {
                        None => pc = par.end,
                        Some(b) => {
                            frames.push(ParFrame {
                                par: *p,
                                branch: 0,
                                entry: cur.clone(),
                                ends: Vec::new(),
                            });
                            pc = b.start;
                        }
                    }
                    range = self.range(&frames);
                }
                Node::ParEnd(p, b) => {
                    let Some(par) = sem.pars.get(*p) else {
                        return Outcome::Fail(None);
                    };
                    let Some(frame) = frames.last_mut().filter(|f| f.par == *p && f.branch == *b)
                    else {
                        return Outcome::Fail(None);
                    };
                    frame.ends.push(cur.clone());
                    if let Some(next) = par.branches.get(b + 1) {
                        cur.clone_from(&frame.entry);
                        frame.branch = b + 1;
                        pc = next.start;
                    } else {
                        let Some(frame) = frames.pop() else {
                            return Outcome::Fail(None);
                        };
                        let outer = self.range(&frames);
                        match self.join(&frame, outer, consumed) {
                            Ok(c) => cur = c,
                            Err(f) => return Outcome::Fail(Some(f)),
                        }
                        pc = par.end;
                    }
                    range = self.range(&frames);
                }
                Node::Msg {
                    stmt,
                    from,
                    to,
                    arity,
                } => {
                    let (f, t) = (from.0 as usize, to.0 as usize);
                    let (Some(&pf), Some(&pt)) = (cur.get(f), cur.get(t)) else {
                        return Outcome::Fail(None);
                    };
                    let data_ok = |m: &Message| match m {
                        Message::Data { stmt: s, values } => {
                            s == stmt && values.as_ref().is_none_or(|v| v.len() == *arity)
                        }
                        Message::Control { .. } => false,
                    };
                    let r = self.expect(
                        *from,
                        pf,
                        range,
                        consumed,
                        |e| matches!(e, Event::Send { to: x, msg } if x == to && data_ok(msg)),
                        || {
                            format!(
                                "expected {} to send s{} to {}",
                                sem.name(*from),
                                stmt.0,
                                sem.name(*to)
                            )
                        },
                    );
                    let nf = match r {
                        Ok(v) => v,
                        Err(e) => return Outcome::Fail(Some(e)),
                    };
                    let step = usize::from(nf != pf);
                    let r = self.expect(
                        *to,
                        pt,
                        range,
                        consumed + step,
                        |e| matches!(e, Event::Recv { from: x, msg } if x == from && data_ok(msg)),
                        || {
                            format!(
                                "expected {} to receive s{} from {}",
                                sem.name(*to),
                                stmt.0,
                                sem.name(*from)
                            )
                        },
                    );
                    let nt = match r {
                        Ok(v) => v,
                        Err(e) => return Outcome::Fail(Some(e)),
                    };
                    consumed += step + usize::from(nt != pt);
                    cur[f] = nf;
                    cur[t] = nt;
                    pc += 1;
                }
                Node::Act { stmt, at, outputs } => {
                    let a = at.0 as usize;
                    let Some(&pa) = cur.get(a) else {
                        return Outcome::Fail(None);
                    };
                    let r = self.expect(
                        *at,
                        pa,
                        range,
                        consumed,
                        |e| {
                            matches!(e, Event::Act { stmt: s, outputs: o }
                                if s == stmt && o.as_ref().is_none_or(|v| v.len() == *outputs))
                        },
                        || format!("expected {} to perform s{}", sem.name(*at), stmt.0),
                    );
                    match r {
                        Ok(v) => {
                            consumed += usize::from(v != pa);
                            cur[a] = v;
                        }
                        Err(e) => return Outcome::Fail(Some(e)),
                    }
                    pc += 1;
                }
                Node::LoopEnter { slot } => {
                    if let Some(x) = last.get_mut(*slot) {
                        *x = usize::MAX;
                    }
                    pc += 1;
                }
                Node::Jump(t) => pc = *t,
                Node::Choice(c) => {
                    let Some(ch) = sem.choices.get(*c) else {
                        return Outcome::Fail(None);
                    };
                    let mut viable: Vec<(bool, Updates)> = Vec::with_capacity(2);
                    let mut fail: Option<Failure> = None;
                    let candidates: &[bool] = match forced.take() {
                        Some(true) => &[true],
                        Some(false) => &[false],
                        None => &[true, false],
                    };
                    let was_forced = candidates.len() == 1;
                    // An iteration that consumed nothing led back to this very
                    // state (cursors only grow): iterating again cannot help.
                    // This stops loops whose body is silent, or whose
                    // lifelines have all stopped (prefix mode).
                    let is_loop = ch.kind == ConstructKind::While;
                    let spun = is_loop && last.get(ch.slot) == Some(&consumed);
                    for &d in candidates {
                        if d && spun {
                            continue;
                        }
                        match self.try_choice(ch, d, &cur, consumed, range) {
                            Ok(updates) => viable.push((d, updates)),
                            Err(f) => {
                                if fail.as_ref().is_none_or(|b| f.progress > b.progress) {
                                    fail = Some(f);
                                }
                            }
                        }
                    }
                    if viable.is_empty() {
                        return Outcome::Fail(fail);
                    }
                    if !was_forced
                        && viable.len() == 2
                        && !visited.insert((pc, cur.clone(), frames.clone()))
                    {
                        return Outcome::Fail(None);
                    }
                    if viable.len() == 2 {
                        // Try first the branch that some participant's next
                        // event points into; else the ⊥ side, which cannot spin.
                        let hinted = |d: bool| {
                            let (lo, hi) = ch.range[Choice::side(d)];
                            std::iter::once(ch.owner)
                                .chain(ch.notify.iter().copied())
                                .any(|l| {
                                    cur.get(l.0 as usize)
                                        .and_then(|&p| self.at(l, p, range).1)
                                        .is_some_and(|e| (lo..hi).contains(&sem.pre(e.stmt())))
                                })
                        };
                        let first = hinted(true) && !hinted(false);
                        let second = !first;
                        stack.push(Pending {
                            pc,
                            cur: cur.clone(),
                            consumed,
                            forced: Some(second),
                            last: last.clone(),
                            frames: frames.clone(),
                        });
                        viable.retain(|(d, _)| *d == first);
                    }
                    let Some((d, (updates, gained))) = viable.pop() else {
                        return Outcome::Fail(None);
                    };
                    if is_loop
                        && d
                        && let Some(x) = last.get_mut(ch.slot)
                    {
                        *x = consumed;
                    }
                    consumed += gained;
                    for (l, p) in updates {
                        if let Some(c) = cur.get_mut(l) {
                            *c = p;
                        }
                    }
                    pc = ch.target[Choice::side(d)];
                }
            }
        }
    }

    /// Checks that decision `d` of `ch` fits the words at `cur`: the control
    /// events (with `control`) and that no lifeline that must act in the chosen
    /// block has its next event elsewhere. Returns the cursor updates and
    /// how many events they take.
    fn try_choice(
        &self,
        ch: &Choice,
        d: bool,
        cur: &[usize],
        consumed: usize,
        range: Range,
    ) -> Result<Updates, Failure> {
        let sem = self.sem;
        let mut updates: Vec<(usize, usize)> = Vec::new();
        let mut progress = consumed;
        let mut gained = 0usize;
        let dec = if d { "⊤" } else { "⊥" };
        if self.opts.control {
            let o = ch.owner.0 as usize;
            let Some(&start) = cur.get(o) else {
                return Err(self.nowhere(consumed));
            };
            let mut pos = self.expect(
                ch.owner,
                start,
                range,
                progress,
                |e| matches!(e, Event::Decide { stmt, tag, decision } if *stmt == ch.stmt && *tag == ch.tag && *decision == d),
                || format!("expected {} to decide {dec} for s{}", sem.name(ch.owner), ch.stmt.0),
            )?;
            gained += usize::from(pos != start);
            let msg = Message::Control {
                stmt: ch.stmt,
                tag: ch.tag,
                decision: d,
            };
            for &r in &ch.notify {
                progress = consumed + gained;
                let before = pos;
                pos = self.expect(
                    ch.owner,
                    pos,
                    range,
                    progress,
                    |e| matches!(e, Event::Send { to, msg: m } if *to == r && *m == msg),
                    || {
                        format!(
                            "expected {} to send {dec} {} to {}",
                            sem.name(ch.owner),
                            ch.tag,
                            sem.name(r)
                        )
                    },
                )?;
                gained += usize::from(pos != before);
            }
            progress = consumed + gained;
            updates.push((o, pos));
            for &r in &ch.notify {
                let Some(&p) = cur.get(r.0 as usize) else {
                    return Err(self.nowhere(consumed));
                };
                let np = self.expect(
                    r,
                    p,
                    range,
                    progress,
                    |e| matches!(e, Event::Recv { from, msg: m } if *from == ch.owner && *m == msg),
                    || {
                        format!(
                            "expected {} to receive {dec} {} from {}",
                            sem.name(r),
                            ch.tag,
                            sem.name(ch.owner)
                        )
                    },
                )?;
                gained += usize::from(np != p);
                progress = consumed + gained;
                updates.push((r.0 as usize, np));
            }
        }
        let side = Choice::side(d);
        let (lo, hi) = ch.range[side];
        let must = if self.opts.control {
            &ch.must_control[side]
        } else {
            &ch.must[side]
        };
        for &x in must {
            let xi = x.0 as usize;
            let pos = updates
                .iter()
                .find(|(l, _)| *l == xi)
                .map(|u| u.1)
                .or_else(|| cur.get(xi).copied())
                .unwrap_or(0);
            let what = || {
                let part = match (ch.kind, d) {
                    (ConstructKind::If, true) => "the then-branch",
                    (ConstructKind::If, false) => "the else-branch",
                    (ConstructKind::While, true) => "another iteration",
                    (ConstructKind::While, false) => "the exit",
                };
                format!(
                    "if {} decides {dec} at s{}, {} of it needs {} to act first",
                    sem.name(ch.owner),
                    ch.stmt.0,
                    part,
                    sem.name(x)
                )
            };
            let (pos, next) = self.at(x, pos, range);
            match next {
                None if self.opts.prefix => {}
                None => {
                    return Err(Failure {
                        progress,
                        lifeline: x,
                        index: pos,
                        expected: what(),
                    });
                }
                Some(e) if (lo..hi).contains(&sem.pre(e.stmt())) => {}
                Some(_) => {
                    return Err(Failure {
                        progress,
                        lifeline: x,
                        index: pos,
                        expected: what(),
                    });
                }
            }
        }
        // Outside any loop a construct runs at most once: an event from the
        // block not chosen can never come later. (A loop's body events can
        // follow an iteration, so only ⊥ is refuted by them.)
        let refutes = !ch.in_loop && (ch.kind == ConstructKind::If || !d);
        if refutes {
            let (olo, ohi) = ch.range[Choice::side(!d)];
            for x in std::iter::once(ch.owner).chain(ch.notify.iter().copied()) {
                let xi = x.0 as usize;
                let pos = updates
                    .iter()
                    .find(|(l, _)| *l == xi)
                    .map(|u| u.1)
                    .or_else(|| cur.get(xi).copied())
                    .unwrap_or(0);
                let (pos, next) = self.at(x, pos, range);
                if let Some(e) = next
                    && (olo..ohi).contains(&sem.pre(e.stmt()))
                {
                    return Err(Failure {
                        progress,
                        lifeline: x,
                        index: pos,
                        expected: format!(
                            "if {} decides {dec} at s{}, this event of the other branch never happens",
                            sem.name(ch.owner),
                            ch.stmt.0
                        ),
                    });
                }
            }
        }
        Ok((updates, gained))
    }

    fn nowhere(&self, progress: usize) -> Failure {
        Failure {
            progress,
            lifeline: LifelineId(0),
            index: 0,
            expected: "malformed workflow".to_owned(),
        }
    }
}
