//! Hovers on the causal forms of guards (LANGUAGE.md §7): what `prev`,
//! `since`, `once`, `at`, `seen` and `on` mean, said of the operands
//! written there, and who evaluates them.

use troupe_syntax::Span;
use troupe_syntax::ast::{self, Cpl, ExprKind, Item, StmtKind};

/// The hover for the causal form whose name is at `offset`, with the span
/// of the whole form.
pub fn hover(file: &ast::File, text: &str, offset: usize) -> Option<(String, Span)> {
    let mut found = None;
    for item in &file.items {
        if let Item::Workflow(w) = item {
            block(&w.body, text, offset, &mut found);
        }
    }
    found
}

fn block(b: &ast::Block, text: &str, offset: usize, found: &mut Option<(String, Span)>) {
    for s in &b.stmts {
        match &s.kind {
            StmtKind::If {
                guard,
                owner,
                then,
                otherwise,
            } => {
                expr(guard, &owner.name, text, offset, found);
                block(then, text, offset, found);
                if let Some(o) = otherwise {
                    block(o, text, offset, found);
                }
            }
            StmtKind::While {
                guard,
                owner,
                body,
                exit,
            } => {
                expr(guard, &owner.name, text, offset, found);
                block(body, text, offset, found);
                if let Some(e) = exit {
                    block(e, text, offset, found);
                }
            }
            StmtKind::For { body, .. } | StmtKind::Coregion { body } => {
                block(body, text, offset, found);
            }
            StmtKind::Par { branches } => {
                for b in branches {
                    block(b, text, offset, found);
                }
            }
            _ => {}
        }
    }
}

/// Looks for the form named at `offset` in `e`, evaluated at `at`.
fn expr(e: &ast::Expr, at: &str, text: &str, offset: usize, found: &mut Option<(String, Span)>) {
    if found.is_some() || !(e.span.start as usize..=e.span.end as usize).contains(&offset) {
        return;
    }
    let src = |x: &ast::Expr| text.get(x.span.range()).unwrap_or("…").to_owned();
    match &e.kind {
        ExprKind::Cpl(form) => {
            let head = Cpl::NAMES
                .iter()
                .find(|n| text[e.span.range()].starts_with(**n))
                .map_or(0, |n| n.len());
            if offset < e.span.start as usize + head {
                let (title, meaning) = describe(form, at, &src);
                *found = Some((
                    format!("```troupe\n{}\n```\n**{title}** — {meaning}", src(e)),
                    e.span,
                ));
                return;
            }
            let inner_at = match form {
                Cpl::At(b, _) => b.name.clone(),
                Cpl::Once(_) => "every lifeline".to_owned(),
                _ => at.to_owned(),
            };
            for x in form.operands() {
                expr(x, &inner_at, text, offset, found);
            }
        }
        ExprKind::Field(x, _) | ExprKind::Unary(_, x) | ExprKind::Paren(x) => {
            expr(x, at, text, offset, found);
        }
        ExprKind::Binary(_, a, b) => {
            expr(a, at, text, offset, found);
            expr(b, at, text, offset, found);
        }
        ExprKind::List(xs) => xs.iter().for_each(|x| expr(x, at, text, offset, found)),
        _ => {}
    }
}

fn describe(form: &Cpl, at: &str, src: &dyn Fn(&ast::Expr) -> String) -> (&'static str, String) {
    match form {
        Cpl::Prev(a) => (
            "previous event",
            format!(
                "`{}` held at {at}'s previous event (false at its first). Evaluated by {at}.",
                src(a)
            ),
        ),
        Cpl::Since(a, b) => (
            "since",
            format!(
                "`{}` holds now, or held at an earlier event of {at} and `{}` has held at every one of its events since. Evaluated by {at}.",
                src(b),
                src(a)
            ),
        ),
        Cpl::Once(a) => (
            "once, in the causal past",
            format!(
                "some event in the strict causal past of {at}'s current event — on any lifeline — satisfied `{}`. Only events {at} can know of count: those that reached it through messages.",
                src(a)
            ),
        ),
        Cpl::At(b, a) => (
            "at another lifeline's latest visible event",
            format!(
                "`{}` held at the latest event of {} that {at} has causally seen (its current event if it is {}'s); false while it has seen none. Inside, names are {}'s variables. What {} did travels to {at} with messages as metadata, never as a message of its own.",
                src(a),
                b.name,
                b.name,
                b.name,
                b.name
            ),
        ),
        Cpl::Seen(b) => (
            "seen value",
            format!(
                "a variable of {0} as it was at {0}'s latest event that {at} has causally seen; an atom reading it is false while no such event binds it.",
                b.name
            ),
        ),
        Cpl::On(b) => ("on", format!("the current event is {}'s.", b.name)),
    }
}
