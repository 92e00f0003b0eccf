//! Rendering of local programs for people (indented text) and for tools (JSON).
//!
//! Lifelines and variables are named as in the source; control tags are shown
//! in their short form `κxxxxxxxx` in text and in full in JSON. Every line of the
//! text form ends with the global statement it comes from (`// s4`), so a reader
//! can go back to the workflow.

use crate::canon::Names;
use crate::flat::{FlatProgram, Op};
use crate::local::{Instr, LocalProgram};
use crate::project::Projection;
use serde_json::{Value as Json, json};
use std::fmt::Write as _;
use troupe_check::ir::{LifelineId, Program, StmtId, Workflow};

/// Column at which the `// sN` comments start (when the code is shorter).
const COMMENT_COLUMN: usize = 44;

/// The local programs of `projection` as text: all lifelines in ⊏ order, or
/// only `only`. `program` and `workflow` are those the projection was made from.
pub fn render_text(
    projection: &Projection,
    program: &Program,
    workflow: &Workflow,
    only: Option<LifelineId>,
) -> String {
    render_text_with(projection, program, workflow, only, false)
}

/// [`render_text`]; each `call` is one line (`call w[…] { … }`) unless
/// `inline`, which prints its inlined instructions inside.
pub fn render_text_with(
    projection: &Projection,
    program: &Program,
    workflow: &Workflow,
    only: Option<LifelineId>,
    inline: bool,
) -> String {
    let names = Names::new(program, workflow);
    let mut out = String::new();
    let mut first = true;
    for local in &projection.programs {
        if only.is_some_and(|l| l != local.lifeline) {
            continue;
        }
        if !first {
            out.push('\n');
        }
        first = false;
        render_local(&mut out, &names, local, inline);
    }
    out
}

fn render_local(out: &mut String, names: &Names<'_>, local: &LocalProgram, inline: bool) {
    let _ = writeln!(out, "lifeline {}:", names.lifeline(local.lifeline));
    if local.body.is_empty() {
        out.push_str("  (takes no part)\n");
    }
    let mut r = TextRenderer {
        names,
        out,
        inline,
        inside: None,
    };
    r.block(&local.body, 1);
}

struct TextRenderer<'a, 'b> {
    names: &'a Names<'b>,
    out: &'a mut String,
    inline: bool,
    /// The call whose inlined instructions are being printed.
    inside: Option<StmtId>,
}

impl TextRenderer<'_, '_> {
    fn line(&mut self, indent: usize, code: &str, stmt: Option<StmtId>) {
        let start = self.out.len();
        for _ in 0..indent {
            self.out.push_str("  ");
        }
        self.out.push_str(code);
        if let Some(s) = stmt {
            let width = self.out[start..].chars().count();
            let pad = COMMENT_COLUMN.saturating_sub(width).max(2);
            for _ in 0..pad {
                self.out.push(' ');
            }
            let _ = write!(self.out, "// s{}", s.0);
        }
        self.out.push('\n');
    }

    fn list(&self, ls: &[LifelineId]) -> String {
        ls.iter()
            .map(|l| self.names.lifeline(*l).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The instructions of a block; the part of an inlined `call` (a run of
    /// consecutive instructions) is one line, or a `call … { }` around them.
    fn block(&mut self, block: &[Instr], indent: usize) {
        let w = self.names.workflow;
        let mut i = 0;
        while i < block.len() {
            let Some(c) = (!w.calls.is_empty())
                .then(|| w.outer_call(block[i].stmt()))
                .flatten()
                .filter(|c| self.inside != Some(c.first))
            else {
                self.instr(&block[i], indent);
                i += 1;
                continue;
            };
            let n = block[i..]
                .iter()
                .take_while(|x| c.contains(x.stmt()))
                .count()
                .max(1);
            let label = c.label(w);
            if self.inline {
                self.line(indent, &format!("{label} {{"), Some(c.first));
                let outer = self.inside.replace(c.first);
                for x in &block[i..i + n] {
                    self.instr(x, indent + 1);
                }
                self.inside = outer;
                self.line(indent, "}", None);
            } else {
                let steps = crate::local::block_size(&block[i..i + n]);
                let code = format!(
                    "{label} {{ {steps} step{} }}",
                    if steps == 1 { "" } else { "s" }
                );
                self.line(indent, &code, Some(c.first));
            }
            i += n;
        }
    }

    fn instr(&mut self, instr: &Instr, indent: usize) {
        let n = self.names;
        match instr {
            Instr::Send { stmt, to, items } => {
                let code = format!("send {} -> {}", paren(&n.exprs(items)), n.lifeline(*to));
                self.line(indent, &code, Some(*stmt));
            }
            Instr::Recv { stmt, from, binds } => {
                let items = binds
                    .iter()
                    .map(|b| n.recv(b))
                    .collect::<Vec<_>>()
                    .join(", ");
                let code = format!("recv {} <- {}", paren(&items), n.lifeline(*from));
                self.line(indent, &code, Some(*stmt));
            }
            Instr::Act {
                stmt,
                outputs,
                call,
            } => {
                self.line(
                    indent,
                    &format!("act {}", n.act(outputs, call)),
                    Some(*stmt),
                );
            }
            Instr::DecideIf(x) => {
                let crate::local::DecideIf {
                    stmt,
                    guard,
                    tag,
                    notify,
                    then,
                    otherwise,
                } = &**x;
                self.line(indent, &format!("if {} {{", n.expr(guard)), Some(*stmt));
                self.control_send(indent + 1, "⊤", *tag, notify);
                self.block(then, indent + 1);
                if !otherwise.is_empty() || !notify.is_empty() {
                    self.line(indent, "} else {", None);
                    self.control_send(indent + 1, "⊥", *tag, notify);
                    self.block(otherwise, indent + 1);
                }
                self.line(indent, "}", None);
            }
            Instr::DecideWhile(x) => {
                let crate::local::DecideWhile {
                    stmt,
                    guard,
                    tag,
                    notify,
                    body,
                    exit,
                } = &**x;
                self.line(indent, &format!("while {} {{", n.expr(guard)), Some(*stmt));
                self.control_send(indent + 1, "⊤", *tag, notify);
                self.block(body, indent + 1);
                if !exit.is_empty() || !notify.is_empty() {
                    self.line(indent, "} exit {", None);
                    self.control_send(indent + 1, "⊥", *tag, notify);
                    self.block(exit, indent + 1);
                }
                self.line(indent, "}", None);
            }
            Instr::Branch(x) => {
                let crate::local::Branch {
                    stmt,
                    from,
                    tag,
                    then,
                    otherwise,
                } = &**x;
                let code = format!("if recv {tag} <- {} {{", n.lifeline(*from));
                self.line(indent, &code, Some(*stmt));
                self.block(then, indent + 1);
                if !otherwise.is_empty() {
                    self.line(indent, "} else {", None);
                    self.block(otherwise, indent + 1);
                }
                self.line(indent, "}", None);
            }
            Instr::Loop(x) => {
                let crate::local::Loop {
                    stmt,
                    from,
                    tag,
                    body,
                    exit,
                } = &**x;
                let code = format!("while recv {tag} <- {} {{", n.lifeline(*from));
                self.line(indent, &code, Some(*stmt));
                self.block(body, indent + 1);
                if !exit.is_empty() {
                    self.line(indent, "} exit {", None);
                    self.block(exit, indent + 1);
                }
                self.line(indent, "}", None);
            }
            Instr::Par(p) => {
                let form = if n.workflow.coregion(p.stmt).is_some() {
                    "coregion"
                } else {
                    "par"
                };
                for (i, part) in p.parts.iter().enumerate() {
                    let code = if i == 0 {
                        format!("{form} branch {} {{", part.branch + 1)
                    } else {
                        format!("}} and branch {} {{", part.branch + 1)
                    };
                    self.line(indent, &code, (i == 0).then_some(p.stmt));
                    self.block(&part.body, indent + 1);
                }
                self.line(indent, "}", None);
            }
        }
    }

    fn control_send(
        &mut self,
        indent: usize,
        decision: &str,
        tag: crate::ControlTag,
        notify: &[LifelineId],
    ) {
        if !notify.is_empty() {
            let code = format!("send {decision} {tag} -> {}", self.list(notify));
            self.line(indent, &code, None);
        }
    }
}

fn paren(items: &str) -> String {
    format!("({items})")
}

/// The flat bytecode of one lifeline as text, one numbered op a line.
pub fn render_flat_text(flat: &FlatProgram, program: &Program, workflow: &Workflow) -> String {
    let n = Names::new(program, workflow);
    let mut out = String::new();
    let _ = writeln!(out, "lifeline {}:", n.lifeline(flat.lifeline));
    for (i, op) in flat.ops.iter().enumerate() {
        let code = match op {
            Op::Send { to, items, .. } => {
                format!("send ({}) -> {}", n.exprs(items), n.lifeline(*to))
            }
            Op::Recv { from, binds, .. } => {
                let items = binds
                    .iter()
                    .map(|b| n.recv(b))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("recv ({items}) <- {}", n.lifeline(*from))
            }
            Op::Act { outputs, call, .. } => format!("act {}", n.act(outputs, call)),
            Op::Decide {
                guard,
                tag,
                notify,
                on_false,
                ..
            } => {
                let to = notify
                    .iter()
                    .map(|l| n.lifeline(*l).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("decide {} {tag} -> [{to}] else @{on_false}", n.expr(guard))
            }
            Op::Await {
                from,
                tag,
                on_false,
                ..
            } => format!("await {tag} <- {} else @{on_false}", n.lifeline(*from)),
            Op::Jump { target } => format!("jump @{target}"),
            Op::Fork { parts, join, .. } => {
                let starts: Vec<String> = std::iter::once(i as u32 + 1)
                    .chain(parts.iter().copied())
                    .map(|p| format!("@{p}"))
                    .collect();
                format!("fork {} join @{join}", starts.join(" "))
            }
            Op::EndPart { fork, part, .. } => format!("end part {part} of @{fork}"),
        };
        let _ = writeln!(out, "  {i:>4}  {code}");
    }
    out
}

/// The local programs as JSON: `{workflow, lifelines: [{name, id, size, body}],
/// constructs: [{stmt, kind, owner, tag, notify}]}`; instructions are objects
/// with an `op` field and expressions are canonical source text.
pub fn to_json(
    projection: &Projection,
    program: &Program,
    workflow: &Workflow,
    only: Option<LifelineId>,
) -> Json {
    let names = Names::new(program, workflow);
    let lifelines: Vec<Json> = projection
        .programs
        .iter()
        .filter(|p| only.is_none_or(|l| l == p.lifeline))
        .map(|p| {
            json!({
                "name": names.lifeline(p.lifeline),
                "id": p.lifeline.0,
                "size": p.size(),
                "body": block_json(&names, &p.body),
            })
        })
        .collect();
    let constructs: Vec<Json> = projection
        .constructs
        .iter()
        .filter(|c| only.is_none_or(|l| l == c.owner || c.notify.contains(&l)))
        .map(|c| {
            json!({
                "stmt": c.stmt.0,
                "kind": c.kind,
                "owner": names.lifeline(c.owner),
                "tag": c.tag,
                "notify": c.notify.iter().map(|l| names.lifeline(*l)).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "workflow": projection.workflow, "lifelines": lifelines, "constructs": constructs })
}

fn block_json(n: &Names<'_>, block: &[Instr]) -> Json {
    Json::Array(block.iter().map(|i| instr_json(n, i)).collect())
}

fn instr_json(n: &Names<'_>, instr: &Instr) -> Json {
    let list = |ls: &[LifelineId]| ls.iter().map(|l| n.lifeline(*l)).collect::<Vec<_>>();
    match instr {
        Instr::Send { stmt, to, items } => json!({
            "op": "send", "stmt": stmt.0, "to": n.lifeline(*to),
            "items": items.iter().map(|e| n.expr(e)).collect::<Vec<_>>(),
        }),
        Instr::Recv { stmt, from, binds } => json!({
            "op": "recv", "stmt": stmt.0, "from": n.lifeline(*from),
            "binds": binds.iter().map(|b| n.recv(b)).collect::<Vec<_>>(),
        }),
        Instr::Act {
            stmt,
            outputs,
            call,
        } => {
            let mut call_text = String::new();
            n.write_call(&mut call_text, call);
            json!({
                "op": "act", "stmt": stmt.0,
                "outputs": outputs.iter().map(|o| o.map(|v| n.var(v))).collect::<Vec<_>>(),
                "call": call_text,
            })
        }
        Instr::DecideIf(x) => {
            let crate::local::DecideIf {
                stmt,
                guard,
                tag,
                notify,
                then,
                otherwise,
            } = &**x;
            json!({
                "op": "decide_if", "stmt": stmt.0, "guard": n.expr(guard), "tag": tag,
                "notify": list(notify), "then": block_json(n, then), "else": block_json(n, otherwise),
            })
        }
        Instr::DecideWhile(x) => {
            let crate::local::DecideWhile {
                stmt,
                guard,
                tag,
                notify,
                body,
                exit,
            } = &**x;
            json!({
                "op": "decide_while", "stmt": stmt.0, "guard": n.expr(guard), "tag": tag,
                "notify": list(notify), "body": block_json(n, body), "exit": block_json(n, exit),
            })
        }
        Instr::Branch(x) => {
            let crate::local::Branch {
                stmt,
                from,
                tag,
                then,
                otherwise,
            } = &**x;
            json!({
                "op": "branch", "stmt": stmt.0, "from": n.lifeline(*from), "tag": tag,
                "then": block_json(n, then), "else": block_json(n, otherwise),
            })
        }
        Instr::Loop(x) => {
            let crate::local::Loop {
                stmt,
                from,
                tag,
                body,
                exit,
            } = &**x;
            json!({
                "op": "loop", "stmt": stmt.0, "from": n.lifeline(*from), "tag": tag,
                "body": block_json(n, body), "exit": block_json(n, exit),
            })
        }
        Instr::Par(p) => json!({
            "op": if n.workflow.coregion(p.stmt).is_some() { "coregion" } else { "par" },
            "stmt": p.stmt.0,
            "parts": p.parts.iter().map(|q| json!({
                "branch": q.branch, "lane": q.lane, "body": block_json(n, &q.body),
            })).collect::<Vec<_>>(),
        }),
    }
}
