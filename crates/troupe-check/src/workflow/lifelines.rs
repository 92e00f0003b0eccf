//! A workflow's lifelines: ⊏ fixed by its `lifelines` line (or the order
//! of first appearance), and every later mention of a lifeline resolved
//! against it, an unknown one reported once with a suggestion.

use crate::Checker;
use crate::ir::{self, LifelineId};
use troupe_syntax::ast;
use troupe_syntax::{Code, Diagnostic};

impl Checker<'_> {
    /// Fixes ⊏: the `lifelines` line, else the order of first appearance.
    pub(super) fn declare_lifelines(&mut self, decl: &ast::WorkflowDecl) {
        if let Some(list) = &decl.lifelines {
            self.wf.declared = true;
            for id in list {
                if let Some(&prev) = self.wf.lifeline_index.get(&id.name) {
                    let prev_span = self.wf.lifelines[prev.0 as usize].span;
                    self.duplicate(&id.name, id.span, prev_span, "lifeline");
                    continue;
                }
                self.add_lifeline(id);
            }
            return;
        }
        for input in &decl.inputs {
            self.add_lifeline(&input.lifeline);
        }
        let mut stack: Vec<&ast::Stmt> = decl.body.stmts.iter().rev().collect();
        while let Some(stmt) = stack.pop() {
            match &stmt.kind {
                ast::StmtKind::Msg { from, to, .. } => {
                    self.add_lifeline(from);
                    self.add_lifeline(to);
                }
                ast::StmtKind::Act { at, .. } => {
                    self.add_lifeline(at);
                }
                ast::StmtKind::If {
                    owner,
                    then,
                    otherwise,
                    ..
                } => {
                    self.add_lifeline(owner);
                    let rest = otherwise.iter().flat_map(|b| b.stmts.iter());
                    let children: Vec<_> = then.stmts.iter().chain(rest).collect();
                    stack.extend(children.into_iter().rev());
                }
                ast::StmtKind::While {
                    owner, body, exit, ..
                } => {
                    self.add_lifeline(owner);
                    let rest = exit.iter().flat_map(|b| b.stmts.iter());
                    let children: Vec<_> = body.stmts.iter().chain(rest).collect();
                    stack.extend(children.into_iter().rev());
                }
                ast::StmtKind::For { owner, body, .. } => {
                    self.add_lifeline(owner);
                    stack.extend(body.stmts.iter().rev());
                }
                ast::StmtKind::Par { branches } => {
                    stack.extend(branches.iter().rev().flat_map(|b| b.stmts.iter().rev()));
                }
                ast::StmtKind::Coregion { body } => stack.extend(body.stmts.iter().rev()),
                ast::StmtKind::Call { map, results, .. } => {
                    for (_, caller) in map {
                        self.add_lifeline(caller);
                    }
                    for item in results {
                        self.add_lifeline(&item.lifeline);
                    }
                }
                ast::StmtKind::Return(items) => {
                    for item in items {
                        self.add_lifeline(&item.lifeline);
                    }
                }
                ast::StmtKind::Lifelines(_) | ast::StmtKind::Error => {}
            }
        }
    }

    fn add_lifeline(&mut self, id: &ast::Ident) -> LifelineId {
        if let Some(&l) = self.wf.lifeline_index.get(&id.name) {
            return l;
        }
        let l = LifelineId(self.wf.lifelines.len() as u32);
        self.wf.lifelines.push(ir::Lifeline {
            name: id.name.clone(),
            span: id.span,
        });
        self.wf.lifeline_index.insert(id.name.clone(), l);
        l
    }

    pub(crate) fn lifeline(&mut self, id: &ast::Ident) -> LifelineId {
        if let Some(&l) = self.wf.lifeline_index.get(&id.name) {
            return l;
        }
        // Only reachable when a `lifelines` line fixed the set.
        let otherwise = format!("add `{}` to the `lifelines` line", id.name);
        self.unknown_lifeline(id, &otherwise);
        // Add it so that the rest of the workflow checks without repeats.
        let l = self.add_lifeline(id);
        self.wf.poisoned.push(l);
        l
    }

    /// E0407 for `id`, with a "did you mean" hint, else `otherwise` and the
    /// workflow's lifelines.
    pub(crate) fn unknown_lifeline(&mut self, id: &ast::Ident, otherwise: &str) {
        let names: Vec<String> = self.wf.lifelines.iter().map(|l| l.name.clone()).collect();
        let hint = match self.did_you_mean(&id.name, names.iter().map(String::as_str)) {
            Some(s) => format!("did you mean `{s}`?"),
            None => format!(
                "{otherwise} ({})",
                crate::suggest::list_some(names.iter().map(String::as_str))
            ),
        };
        self.error(
            Diagnostic::error(
                Code::UnknownLifeline,
                id.span,
                format!("`{}` is not a lifeline of this workflow", id.name),
            )
            .with_label("unknown lifeline")
            .with_hint(hint),
        );
    }
}
