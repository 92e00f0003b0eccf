//! `act`: a local action at one lifeline, either an expression or a call
//! of a declared action (arity and types of its arguments and outputs,
//! the built-in `sleep` declared on first use), binding its targets.

use crate::Checker;
use crate::expr::Scope;
use crate::ir::{self, Call, StmtKind};
use crate::types::Type;
use crate::value::Value;
use troupe_syntax::ast::{self, ActRhs};
use troupe_syntax::{Code, Diagnostic, Span};

impl Checker<'_> {
    /// The built-in `sleep(duration: Text)`, declared on its first use.
    fn sleep_action(&mut self) -> ir::ActionId {
        let id = ir::ActionId(self.actions.len() as u32);
        self.action_names.insert(ir::SLEEP.to_owned(), id);
        self.actions.push(ir::Action {
            name: ir::SLEEP.to_owned(),
            params: vec![ir::Param {
                name: "duration".into(),
                ty: Type::Text,
            }],
            outputs: Vec::new(),
            kind: ir::ActionKind::Sleep,
            span: Span::new(0, 0),
        });
        id
    }

    /// A literal duration of `sleep` is checked here; one computed at run
    /// time is checked when the step runs.
    fn sleep_literal(&mut self, args: &[ir::Expr]) {
        let Some(ir::Expr {
            kind: ir::ExprKind::Lit(Value::Text(text)),
            span,
            ..
        }) = args.first()
        else {
            return;
        };
        if humantime::parse_duration(text.trim()).is_err() {
            self.error(
                Diagnostic::error(
                    Code::TypeMismatch,
                    *span,
                    format!("`sleep` waits for a duration, and {text:?} is not one"),
                )
                .with_label("not a duration")
                .with_hint("write it as \"30s\", \"10m\", \"4h\" or \"2days\""),
            );
        }
    }

    pub(super) fn act(
        &mut self,
        at: &ast::Ident,
        targets: &[ast::Ident],
        rhs: &ActRhs,
    ) -> StmtKind {
        let at_id = self.lifeline(at);
        let scope = Scope::At(at_id);
        let (call, output_types) = match rhs {
            ActRhs::Call { name, args } => match self
                .action_names
                .get(&name.name)
                .copied()
                .or_else(|| (name.name == ir::SLEEP).then(|| self.sleep_action()))
            {
                Some(action_id) => {
                    let action = &self.actions[action_id.0 as usize];
                    let params: Vec<_> = action.params.iter().map(|p| p.ty.clone()).collect();
                    let outputs: Vec<_> = action.outputs.iter().map(|p| p.ty.clone()).collect();
                    let action_span = action.span;
                    let required = match &action.kind {
                        ir::ActionKind::Tool(t) => {
                            t.defaults.iter().take_while(|d| d.is_none()).count().max(
                                t.defaults
                                    .iter()
                                    .rposition(Option::is_none)
                                    .map_or(0, |i| i + 1),
                            )
                        }
                        _ => params.len(),
                    };
                    if args.len() < required || args.len() > params.len() {
                        let sig = self.signature(action_id);
                        let builtin = matches!(
                            self.actions[action_id.0 as usize].kind,
                            ir::ActionKind::Sleep
                        );
                        let d = Diagnostic::error(
                            Code::ArgumentCount,
                            name.span,
                            format!(
                                "`{}` takes {} argument(s) but {} were given",
                                name.name,
                                if required == params.len() {
                                    params.len().to_string()
                                } else {
                                    format!("{required} to {}", params.len())
                                },
                                args.len()
                            ),
                        );
                        self.error(if builtin {
                            d.with_hint("`sleep` takes one duration: `act A: sleep(\"10m\")`")
                        } else {
                            d.with_related(action_span, format!("declared as `{sig}`"))
                        });
                    }
                    let mut checked = Vec::with_capacity(args.len());
                    for (i, arg) in args.iter().enumerate() {
                        let expected = params.get(i);
                        let e = self.expr(arg, &scope, expected);
                        if let Some(t) = expected {
                            let pname = format!(
                                "parameter `{}`",
                                self.actions[action_id.0 as usize].params[i].name
                            );
                            self.expect_type(&e, t, &pname);
                        }
                        checked.push(e);
                    }
                    if matches!(
                        self.actions[action_id.0 as usize].kind,
                        ir::ActionKind::Sleep
                    ) {
                        self.sleep_literal(&checked);
                    }
                    (
                        Call::Action {
                            action: action_id,
                            args: checked,
                        },
                        Some(outputs),
                    )
                }
                None if ast::Cpl::NAMES.contains(&name.name.as_str()) => {
                    // `act B: z = at(A, …)`: a causal form, not an action.
                    self.outside_guard(&name.name, name.span);
                    (
                        Call::Expr(ir::Expr {
                            kind: ir::ExprKind::Lit(Value::Bool(false)),
                            ty: Type::Error,
                            span: name.span,
                        }),
                        None,
                    )
                }
                None => {
                    let hint = match self
                        .did_you_mean(&name.name, crate::suggest::sorted_keys(&self.action_names))
                    {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => "declare it with `llm`, `pure`, `effect` or `human`".to_owned(),
                    };
                    self.error(
                        Diagnostic::error(
                            Code::UnknownAction,
                            name.span,
                            format!("no action named `{}`", name.name),
                        )
                        .with_label("unknown action")
                        .with_hint(hint),
                    );
                    for arg in args {
                        self.expr(arg, &scope, None);
                    }
                    (
                        Call::Expr(ir::Expr {
                            kind: ir::ExprKind::Lit(Value::Bool(false)),
                            ty: Type::Error,
                            span: name.span,
                        }),
                        None,
                    )
                }
            },
            ActRhs::Expr(e) => {
                let expected = match targets {
                    [one] => self
                        .wf
                        .lookup(at_id, &one.name)
                        .map(|v| self.wf.vars[v.0 as usize].ty.clone()),
                    _ => None,
                };
                let e = self.expr(e, &scope, expected.as_ref());
                let ty = e.ty.clone();
                if targets.len() != 1 {
                    self.error(
                        Diagnostic::error(
                            Code::OutputCount,
                            e.span,
                            format!(
                                "an expression yields one value, but {} names are bound",
                                targets.len()
                            ),
                        )
                        .with_hint("bind one name: `act A: y = expr`"),
                    );
                }
                (Call::Expr(e), Some(vec![ty]))
            }
        };
        let mut outputs = Vec::with_capacity(targets.len());
        if let Some(types) = output_types {
            if let (ActRhs::Call { name, .. }, true) = (rhs, types.len() != targets.len()) {
                let hint = if targets.is_empty() {
                    format!(
                        "bind its outputs: `act {}: {} = {}(…)` (use `_` to drop one)",
                        at.name,
                        vec!["_"; types.len()].join(", "),
                        name.name
                    )
                } else {
                    format!(
                        "`{}` has {} output(s); list one name per output (use `_` to drop one)",
                        name.name,
                        types.len()
                    )
                };
                self.error(
                    Diagnostic::error(
                        Code::OutputCount,
                        name.span,
                        format!(
                            "`{}` yields {} output(s) but {} name(s) are bound",
                            name.name,
                            types.len(),
                            targets.len()
                        ),
                    )
                    .with_hint(hint),
                );
            }
            for (i, target) in targets.iter().enumerate() {
                if target.name == "_" {
                    outputs.push(None);
                    continue;
                }
                let ty = types.get(i).cloned().unwrap_or(Type::Error);
                outputs.push(Some(self.bind(at_id, target, ty)));
            }
        }
        StmtKind::Act {
            at: at_id,
            outputs,
            call,
        }
    }

    fn signature(&self, id: ir::ActionId) -> String {
        let a = &self.actions[id.0 as usize];
        let params: Vec<_> = a
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, self.types.display(&p.ty)))
            .collect();
        let outputs: Vec<_> = a
            .outputs
            .iter()
            .map(|p| format!("{}: {}", p.name, self.types.display(&p.ty)))
            .collect();
        format!(
            "{} {}({}) -> ({})",
            a.kind.label(),
            a.name,
            params.join(", "),
            outputs.join(", ")
        )
    }
}
