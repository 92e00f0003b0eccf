//! Sequence charts: one chart model, two sources, two backends.
//!
//! Both a global workflow (static: every branch, frames for `if`/`while`) and
//! one concrete execution (a tuple of local words, as a runtime records it)
//! lower to the same [`Chart`]: lifeline columns and a list of [`Item`]s
//! (messages, notes, frame start/else/end). [`svg::render`] and
//! [`mermaid::render`] draw any chart.

pub mod mermaid;
pub mod plan;
pub mod svg;

use crate::event::{Event, Execution, Message};
use std::collections::{HashMap, HashSet};
use troupe_check::Value;
use troupe_check::ir::{
    Block, LifelineId, MsgItem, Program, Recv, Stmt, StmtId, StmtKind, Workflow,
};
use troupe_project::{Names, Projection, project};

/// The kind of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// An owned `if`: an alt box with an else section.
    Alt,
    /// An owned `while` (or `for`).
    Loop,
    /// An inlined `call`, drawn expanded (`--inline`).
    Call,
    /// A `par` (or a `coregion`): one section per branch, separated by
    /// [`Item::FrameElse`] (Mermaid's `and`).
    Par,
    /// The accepted plan of a `planner` call, nested in a run's chart.
    Plan,
}

impl FrameKind {
    /// The frame's keyword: Mermaid's for alt and loop; `call` (drawn as a
    /// Mermaid `rect`) for a call.
    pub fn keyword(self) -> &'static str {
        match self {
            FrameKind::Alt => "alt",
            FrameKind::Loop => "loop",
            FrameKind::Call => "call",
            FrameKind::Par => "par",
            FrameKind::Plan => "plan",
        }
    }
}

/// One row (or frame boundary) of a chart. Lifelines are column indices.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An arrow; `control` ones are drawn dotted.
    Message {
        from: usize,
        to: usize,
        label: String,
        control: bool,
    },
    /// A note over one lifeline (a local action or decision).
    Note {
        over: usize,
        text: String,
    },
    /// Opens a frame; `owner` places a frame with no content.
    FrameStart {
        kind: FrameKind,
        label: String,
        owner: Option<usize>,
    },
    /// Separates the sections of an alt frame.
    FrameElse {
        label: String,
    },
    FrameEnd,
    /// A box across the columns `from..=to` standing for what it names: a
    /// `call` drawn collapsed.
    Ref {
        from: usize,
        to: usize,
        text: String,
    },
}

/// A sequence chart, backend-independent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chart {
    pub title: String,
    pub lifelines: Vec<String>,
    pub items: Vec<Item>,
}

/// What to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChartOptions {
    /// Draw the control broadcasts (dotted arrows `⊤ κ…`/`⊥ κ…`).
    pub show_control: bool,
    /// Draw each `call` expanded in a frame, rather than as one box.
    pub inline: bool,
}

/// The chart of a global workflow.
pub fn workflow_chart(program: &Program, workflow: &Workflow, opts: &ChartOptions) -> Chart {
    let names = Names::new(program, workflow);
    // Only the control broadcasts need the projection; a malformed IR still
    // draws, without them.
    let projection = if opts.show_control {
        project(program, workflow).ok()
    } else {
        None
    };
    let mut chart = Chart {
        title: workflow.name.clone(),
        lifelines: workflow.lifelines.iter().map(|l| l.name.clone()).collect(),
        items: Vec::new(),
    };
    let mut l = Lower {
        names,
        projection: projection.as_ref(),
        items: &mut chart.items,
        inline: opts.inline,
    };
    l.block(&workflow.body);
    chart
}

struct Lower<'a, 'b> {
    names: Names<'a>,
    projection: Option<&'b Projection>,
    items: &'b mut Vec<Item>,
    inline: bool,
}

fn col(l: LifelineId) -> usize {
    l.0 as usize
}

/// `plan` when both sides name the same, `plan → final_plan` otherwise.
pub fn message_label(names: &Names<'_>, items: &[MsgItem]) -> String {
    if items.is_empty() {
        return "()".to_owned();
    }
    let send = names.send_items(items);
    let recv = names.recv_items(items);
    if send == recv {
        send
    } else {
        format!("{send} → {recv}")
    }
}

impl Lower<'_, '_> {
    /// The statements of `block`; an inlined call (consecutive statements)
    /// is one box, or a frame around them with `inline`.
    fn block(&mut self, block: &Block) {
        let w = self.names.workflow;
        let mut open: Option<troupe_check::ir::StmtId> = None;
        for s in &block.stmts {
            if let Some(end) = open
                && s.id >= end
            {
                open = None;
                if self.inline {
                    self.items.push(Item::FrameEnd);
                }
            }
            if open.is_none()
                && let Some(c) = w.call_at(s.id)
            {
                open = Some(c.end);
                let cols: Vec<usize> = c.map.iter().map(|(_, a)| col(*a)).collect();
                let (from, to) = (
                    cols.iter().copied().min().unwrap_or(0),
                    cols.iter().copied().max().unwrap_or(0),
                );
                if self.inline {
                    self.items.push(Item::FrameStart {
                        kind: FrameKind::Call,
                        label: c.label(w),
                        owner: Some(from),
                    });
                } else {
                    self.items.push(Item::Ref {
                        from,
                        to,
                        text: c.label(w),
                    });
                }
            }
            if open.is_some() && !self.inline {
                continue;
            }
            self.stmt(s);
        }
        if open.is_some() && self.inline {
            self.items.push(Item::FrameEnd);
        }
    }

    fn control(&mut self, stmt: &Stmt, owner: LifelineId, decision: bool) {
        let Some(c) = self.projection.and_then(|p| p.construct(stmt.id)) else {
            return;
        };
        let d = if decision { "⊤" } else { "⊥" };
        for r in &c.notify {
            self.items.push(Item::Message {
                from: col(owner),
                to: col(*r),
                label: format!("{d} {}", c.tag),
                control: true,
            });
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        let n = self.names;
        if n.workflow.is_for_step(stmt.id) {
            return;
        }
        match &stmt.kind {
            StmtKind::Msg { from, to, items } => self.items.push(Item::Message {
                from: col(*from),
                to: col(*to),
                label: message_label(&n, items),
                control: false,
            }),
            StmtKind::Act { at, outputs, call } => {
                self.items.push(Item::Note {
                    over: col(*at),
                    text: n.act(outputs, call),
                });
            }
            StmtKind::If {
                owner,
                guard,
                then,
                otherwise,
            } => {
                let label = format!("[{}] @ {}", n.expr(guard), n.lifeline(*owner));
                self.items.push(Item::FrameStart {
                    kind: FrameKind::Alt,
                    label,
                    owner: Some(col(*owner)),
                });
                self.control(stmt, *owner, true);
                self.block(then);
                let before = self.items.len();
                self.control(stmt, *owner, false);
                self.block(otherwise);
                if self.items.len() > before {
                    self.items.insert(
                        before,
                        Item::FrameElse {
                            label: "[else]".to_owned(),
                        },
                    );
                }
                self.items.push(Item::FrameEnd);
            }
            StmtKind::While {
                owner,
                guard,
                body,
                exit,
            } => {
                let label = match n.workflow.for_each(stmt.id) {
                    Some(f) => format!(
                        "[for {} in {}] @ {}",
                        n.var(f.var),
                        n.var(f.list),
                        n.lifeline(*owner)
                    ),
                    None => format!("[{}] @ {}", n.expr(guard), n.lifeline(*owner)),
                };
                self.items.push(Item::FrameStart {
                    kind: FrameKind::Loop,
                    label,
                    owner: Some(col(*owner)),
                });
                self.control(stmt, *owner, true);
                self.block(body);
                self.items.push(Item::FrameEnd);
                self.control(stmt, *owner, false);
                self.block(exit);
            }
            StmtKind::Par { branches } => {
                let coregion = n.workflow.coregion(stmt.id);
                let owner = branches
                    .iter()
                    .flat_map(|b| b.stmts.first())
                    .map(|s| match &s.kind {
                        StmtKind::Msg { from, .. } => col(*from),
                        StmtKind::Act { at, .. } => col(*at),
                        StmtKind::If { owner, .. } | StmtKind::While { owner, .. } => col(*owner),
                        StmtKind::Par { .. } => 0,
                    })
                    .min();
                for (i, b) in branches.iter().enumerate() {
                    let label = match coregion {
                        Some(c) if i == 0 => format!("[coregion] @ {}", n.lifeline(c.receiver)),
                        Some(_) => "[coregion]".to_owned(),
                        None => format!("[branch {}]", i + 1),
                    };
                    if i == 0 {
                        self.items.push(Item::FrameStart {
                            kind: FrameKind::Par,
                            label,
                            owner,
                        });
                    } else {
                        self.items.push(Item::FrameElse { label });
                    }
                    self.block(b);
                }
                self.items.push(Item::FrameEnd);
            }
        }
    }
}

const VALUE_CHARS: usize = 32;

fn short(names: &Names<'_>, v: &Value) -> String {
    let s = names.value(v);
    if s.chars().count() > VALUE_CHARS {
        format!("{}…", s.chars().take(VALUE_CHARS - 1).collect::<String>())
    } else {
        s
    }
}

/// The chart of one execution: its events in an order compatible with
/// causality, a send drawn together with its receive when the receiver is
/// ready for it. Decisions appear as notes; control messages only with
/// `show_control`.
pub fn execution_chart(
    program: &Program,
    workflow: &Workflow,
    exec: &Execution,
    opts: &ChartOptions,
) -> Chart {
    execution_chart_moves(program, workflow, exec, opts, &[])
}

/// [`execution_chart`] of a run that moved to other versions of its
/// workflow (`troupe upgrade`): `moves` are, in order, where each lifeline
/// stood when the run moved (events per lifeline) and what to write
/// there. Every event before a move is drawn before its mark, every event
/// after it after: a box across the lifelines.
pub fn execution_chart_moves(
    program: &Program,
    workflow: &Workflow,
    exec: &Execution,
    opts: &ChartOptions,
    moves: &[(Vec<u64>, String)],
) -> Chart {
    let names = Names::new(program, workflow);
    let stmts = workflow.stmts_by_id();
    let stmt_of = |id: &StmtId| stmts.get(id.0 as usize).copied().flatten();
    let n = exec.words.len();
    let mut lifelines: Vec<String> = workflow.lifelines.iter().map(|l| l.name.clone()).collect();
    while lifelines.len() < n {
        lifelines.push(format!("#{}", lifelines.len()));
    }
    let mut chart = Chart {
        title: workflow.name.clone(),
        lifelines,
        items: Vec::new(),
    };

    // FIFO matching: the k-th receive at q from p is the k-th send at p to
    // q, per branch of a `par` (each branch has its own channels).
    let lanes = troupe_project::Lanes::new(workflow);
    let mut sends: HashMap<(usize, usize, u32), Vec<usize>> = HashMap::new();
    for (p, w) in exec.words.iter().enumerate() {
        for (i, e) in w.iter().enumerate() {
            if let Event::Send { to, msg } = e {
                sends
                    .entry((p, to.0 as usize, lanes.of(msg.stmt())))
                    .or_default()
                    .push(i);
            }
        }
    }
    let mut recv_of: HashMap<(usize, usize), (usize, usize)> = HashMap::new();
    let mut send_of: HashMap<(usize, usize), (usize, usize)> = HashMap::new();
    for (q, w) in exec.words.iter().enumerate() {
        let mut k: HashMap<(usize, u32), usize> = HashMap::new();
        for (j, e) in w.iter().enumerate() {
            if let Event::Recv { from, msg } = e {
                let p = from.0 as usize;
                let lane = lanes.of(msg.stmt());
                let c = k.entry((p, lane)).or_insert(0);
                if let Some(&i) = sends.get(&(p, q, lane)).and_then(|v| v.get(*c)) {
                    recv_of.insert((p, i), (q, j));
                    send_of.insert((q, j), (p, i));
                }
                *c += 1;
            }
        }
    }

    let label = |p: usize, e: &Event| -> Option<(String, bool)> {
        let Event::Send { msg, .. } = e else {
            return None;
        };
        match msg {
            Message::Data { stmt, values } => {
                let items: &[MsgItem] = match stmt_of(stmt).map(|s| &s.kind) {
                    Some(StmtKind::Msg { items, .. }) => items,
                    _ => &[],
                };
                let text = match values {
                    Some(vs) => vs
                        .iter()
                        .enumerate()
                        .map(|(i, v)| match items.get(i).map(|it| &it.recv) {
                            Some(Recv::Bind(x)) => {
                                format!("{} = {}", names.var(*x), short(&names, v))
                            }
                            _ => short(&names, v),
                        })
                        .collect::<Vec<_>>()
                        .join(", "),
                    None => message_label(&names, items),
                };
                let _ = p;
                Some((
                    if text.is_empty() {
                        "()".to_owned()
                    } else {
                        text
                    },
                    false,
                ))
            }
            Message::Control { tag, decision, .. } => {
                Some((format!("{} {tag}", if *decision { "⊤" } else { "⊥" }), true))
            }
        }
    };

    let mut pos = vec![0usize; n];
    let mut drawn: HashSet<(usize, usize)> = HashSet::new();
    // How far each lifeline may be drawn before the next move's mark.
    let mut moves = moves.iter();
    let barrier = |m: Option<&(Vec<u64>, String)>| -> Vec<usize> {
        (0..n)
            .map(|l| match m {
                Some((cut, _)) => cut.get(l).map_or(0, |c| *c as usize),
                None => usize::MAX,
            })
            .collect()
    };
    let mut next_move = moves.next();
    let mut limit = barrier(next_move);
    loop {
        let mut progress = false;
        for l in 0..n {
            while let Some(e) = exec.words[l].get(pos[l]).filter(|_| pos[l] < limit[l]) {
                match e {
                    Event::Act { stmt, .. } if workflow.is_for_step(*stmt) => {}
                    Event::Act { stmt, outputs } => {
                        let mut text = match stmt_of(stmt).map(|s| &s.kind) {
                            Some(StmtKind::Act {
                                outputs: o, call, ..
                            }) => names.act(o, call),
                            _ => format!("s{}", stmt.0),
                        };
                        if let Some(vs) = outputs.as_ref().filter(|v| !v.is_empty()) {
                            let vals = vs
                                .iter()
                                .map(|v| short(&names, v))
                                .collect::<Vec<_>>()
                                .join(", ");
                            text = format!("{text} ⇒ {vals}");
                        }
                        chart.items.push(Item::Note { over: l, text });
                    }
                    Event::Decide { stmt, decision, .. } => {
                        let guard = match stmt_of(stmt).map(|s| &s.kind) {
                            Some(StmtKind::While { .. }) if workflow.for_each(*stmt).is_some() => {
                                workflow.for_each(*stmt).map_or_else(String::new, |f| {
                                    format!("for {} in {}", names.var(f.var), names.var(f.list))
                                })
                            }
                            Some(StmtKind::If { guard, .. } | StmtKind::While { guard, .. }) => {
                                names.expr(guard)
                            }
                            _ => format!("s{}", stmt.0),
                        };
                        let d = if *decision { "⊤" } else { "⊥" };
                        chart.items.push(Item::Note {
                            over: l,
                            text: format!("[{guard}] ⇒ {d}"),
                        });
                    }
                    Event::Send { to, msg } => {
                        let q = to.0 as usize;
                        let matched = recv_of.get(&(l, pos[l])).copied();
                        // Draw now if the receive is next at the receiver (a
                        // horizontal arrow) or never comes.
                        let ready = match matched {
                            Some((mq, j)) => pos.get(mq) == Some(&j),
                            None => true,
                        };
                        if !ready {
                            break;
                        }
                        if (opts.show_control || !msg.is_control())
                            && let Some((text, control)) = label(l, e)
                        {
                            let text = if matched.is_none() {
                                format!("{text} (not received)")
                            } else {
                                text
                            };
                            chart.items.push(Item::Message {
                                from: l,
                                to: q,
                                label: text,
                                control,
                            });
                        }
                        if let Some((mq, j)) = matched {
                            drawn.insert((mq, j));
                            if let Some(pq) = pos.get_mut(mq) {
                                *pq = j + 1;
                            }
                        }
                    }
                    Event::Recv { .. } => {
                        if !drawn.contains(&(l, pos[l])) {
                            // Its send has not been drawn yet: wait for it (or,
                            // if it has none, it is invalid; skip it).
                            if send_of.contains_key(&(l, pos[l])) {
                                break;
                            }
                        }
                    }
                }
                pos[l] += 1;
                progress = true;
            }
        }
        if let Some((_, text)) = next_move
            && pos
                .iter()
                .zip(&exec.words)
                .zip(&limit)
                .all(|((p, w), lim)| *p >= (*lim).min(w.len()))
        {
            chart.items.push(Item::Ref {
                from: 0,
                to: n.saturating_sub(1),
                text: text.clone(),
            });
            next_move = moves.next();
            limit = barrier(next_move);
            continue;
        }
        if pos.iter().zip(&exec.words).all(|(p, w)| *p >= w.len()) {
            break;
        }
        if !progress {
            // Crossing messages: draw the first pending send early and let its
            // receive be skipped when reached.
            let mut forced = false;
            for (l, word) in exec.words.iter().enumerate() {
                if let Some(e @ Event::Send { to, msg }) =
                    word.get(pos[l]).filter(|_| pos[l] < limit[l])
                {
                    if (opts.show_control || !msg.is_control())
                        && let Some((text, control)) = label(l, e)
                    {
                        chart.items.push(Item::Message {
                            from: l,
                            to: to.0 as usize,
                            label: text,
                            control,
                        });
                    }
                    if let Some(&r) = recv_of.get(&(l, pos[l])) {
                        drawn.insert(r);
                    }
                    pos[l] += 1;
                    forced = true;
                    break;
                }
            }
            if !forced {
                break;
            }
        }
    }
    chart
}

/// `chart_svg`: the workflow as a self-contained SVG sequence chart.
pub fn chart_svg(program: &Program, workflow: &Workflow, opts: &ChartOptions) -> String {
    svg::render(&workflow_chart(program, workflow, opts))
}

/// `chart_mermaid`: the workflow as a Mermaid `sequenceDiagram`.
pub fn chart_mermaid(program: &Program, workflow: &Workflow, opts: &ChartOptions) -> String {
    mermaid::render(&workflow_chart(program, workflow, opts))
}
