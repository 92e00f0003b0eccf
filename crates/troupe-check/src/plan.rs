//! Verified planning: the `planner` declaration (its fields and lists,
//! checked with the rest of the file) and [`check_plan`], which checks a
//! workflow a model wrote at run time against its planner.
//!
//! A plan is the source of exactly one `workflow` and nothing else. It is
//! checked in the planner's program: it sees the program's `enum` and
//! `record` types and, of its actions, only those the planner's `actions:`
//! lists, so a plan can neither declare nor reach anything else. On top of
//! the rules every workflow obeys (LANGUAGE.md §4) a plan must
//!
//! - use only the lifelines of `lifelines:` (E0803),
//! - take exactly the planner's parameters as its inputs, with the same
//!   names and types in the same order, each at a lifeline of its choice,
//!   and return one variable per planner output, of that output's type, in
//!   order (E0804): so a plan's inputs are the planner's arguments and its
//!   results are the planner's outputs,
//! - call no declared action that is not listed (E0805), and
//! - be at most [`MAX_PLAN_BYTES`] long, without imports or declarations
//!   (E0802).
//!
//! The checked plan is a [`Program`] with the planner's program's types and
//! actions (the same [`ActionId`]s) and the plan as its one workflow, ready
//! to be projected and run like any other.

use crate::Checker;
use crate::ir::{
    self, ActionId, ActionKind, DEFAULT_PLAN_RETRIES, Param, PlannerAction, Program, Template,
};
use crate::types::{Type, TypeTable};
use std::collections::HashMap;
use troupe_syntax::ast::{self, ExprKind};
use troupe_syntax::{Code, Diagnostic, Span};

/// The longest plan source accepted, in bytes. A plan is a small program
/// over a handful of actions; anything longer is refused before parsing.
pub const MAX_PLAN_BYTES: usize = 64 * 1024;

/// The most `retries:` a planner may declare.
pub const MAX_PLAN_RETRIES: i64 = 10;

impl Checker<'_> {
    pub(crate) fn planner_body(
        &mut self,
        decl: &ast::ActionDecl,
        fields: &[ast::ActionField],
        params: &[Param],
        outputs: &[Param],
    ) -> ActionKind {
        let mut system = None;
        let mut prompt = None;
        let mut model = None;
        let mut temperature = None;
        let mut retries = DEFAULT_PLAN_RETRIES;
        let mut actions: Option<Vec<ast::Ident>> = None;
        let mut lifelines: Vec<String> = Vec::new();
        let mut has_lifelines = false;
        let mut lists_reported = false;
        for f in self.unique_fields(
            fields,
            &[
                "system",
                "prompt",
                "model",
                "temperature",
                "actions",
                "lifelines",
                "retries",
            ],
            "planner",
        ) {
            match f.name.name.as_str() {
                "system" => system = self.template(f, params),
                "prompt" => prompt = self.template(f, params),
                "model" => model = self.plain_text(f),
                "temperature" => match f.value.kind {
                    ExprKind::Float(x) if (0.0..=2.0).contains(&x) => temperature = Some(x),
                    ExprKind::Int(n) if (0..=2).contains(&n) => temperature = Some(n as f64),
                    _ => self.bad_field(f, "a number from 0 to 2"),
                },
                "retries" => match f.value.kind {
                    ExprKind::Int(n) if (0..=MAX_PLAN_RETRIES).contains(&n) => retries = n as u32,
                    _ => self.bad_field(f, "a whole number from 0 to 10"),
                },
                "actions" => {
                    actions = Some(self.name_list(f, "actions").unwrap_or_default());
                    if actions.as_ref().is_some_and(Vec::is_empty)
                        && !matches!(&f.value.kind, ExprKind::List(items) if items.is_empty())
                    {
                        // Reported as not a list, or its items as not names.
                        actions = None;
                        lists_reported = true;
                    }
                }
                "lifelines" => {
                    has_lifelines = true;
                    let mut seen: HashMap<String, Span> = HashMap::new();
                    let names = self.name_list(f, "lifelines");
                    let reported = names.is_none();
                    for id in names.unwrap_or_default() {
                        if let Some(&prev) = seen.get(&id.name) {
                            self.error(
                                Diagnostic::error(
                                    Code::PlannerList,
                                    id.span,
                                    format!(
                                        "`{}` is listed twice in the lifelines of `{}`",
                                        id.name, decl.name.name
                                    ),
                                )
                                .with_label("listed again")
                                .with_related(prev, "first listed here"),
                            );
                            continue;
                        }
                        seen.insert(id.name.clone(), id.span);
                        lifelines.push(id.name);
                    }
                    if lifelines.is_empty()
                        && !reported
                        && matches!(&f.value.kind, ExprKind::List(items) if items.is_empty())
                    {
                        self.empty_list(f, decl, "lifelines", "the lifelines a plan may use");
                    }
                }
                _ => {}
            }
        }
        let missing = |what: &str| {
            Diagnostic::error(
                Code::InvalidActionField,
                decl.name.span,
                format!("the `planner` `{}` has no `{what}`", decl.name.name),
            )
        };
        if outputs.is_empty() {
            self.error(
                Diagnostic::error(
                    Code::InvalidActionBody,
                    decl.name.span,
                    "a `planner` must declare its outputs",
                )
                .with_hint("add `-> (answer: Text)`: the plan's results become these outputs"),
            );
        }
        let prompt = prompt.unwrap_or_else(|| {
            self.error(missing("prompt").with_hint("add `prompt: \"…\"`: what the plan is for"));
            Template { parts: Vec::new() }
        });
        match actions {
            Some(names) if names.is_empty() => {
                if let Some(f) = fields.iter().find(|f| f.name.name == "actions") {
                    self.empty_list(f, decl, "actions", "the actions a plan may call");
                }
            }
            Some(names) => {
                self.pending_planners
                    .push((self.actions.len(), decl.name.name.clone(), names))
            }
            None if lists_reported => {}
            None => self.error(
                missing("actions").with_hint("add `actions: [a, b]`: the actions a plan may call"),
            ),
        }
        if !has_lifelines {
            self.error(
                missing("lifelines")
                    .with_hint("add `lifelines: [A, B]`: the lifelines a plan may use"),
            );
        }
        ActionKind::Planner(PlannerAction {
            system,
            prompt,
            model,
            temperature,
            // Resolved once every action is declared (see `resolve_planner_actions`).
            actions: Vec::new(),
            lifelines,
            retries,
        })
    }

    /// `[a, b]` of plain names; anything else is E0801 (`None`: not a list).
    fn name_list(&mut self, f: &ast::ActionField, what: &str) -> Option<Vec<ast::Ident>> {
        let mut out = Vec::new();
        match &f.value.kind {
            ExprKind::List(items) => {
                for item in items {
                    match &item.kind {
                        ExprKind::Name(id) => out.push(id.clone()),
                        _ => self.error(
                            Diagnostic::error(
                                Code::PlannerList,
                                item.span,
                                format!("`{what}` lists names only"),
                            )
                            .with_label("not a name"),
                        ),
                    }
                }
            }
            _ => {
                self.error(
                    Diagnostic::error(
                        Code::PlannerList,
                        f.value.span,
                        format!("`{what}` must be a list of names, `[a, b]`"),
                    )
                    .with_label("not a list"),
                );
                return None;
            }
        }
        Some(out)
    }

    fn empty_list(&mut self, f: &ast::ActionField, decl: &ast::ActionDecl, what: &str, is: &str) {
        self.error(
            Diagnostic::error(
                Code::PlannerList,
                f.value.span,
                format!("`{what}` of `{}` is empty", decl.name.name),
            )
            .with_label("empty")
            .with_hint(format!("list {is}: a plan can do nothing without them")),
        );
    }

    /// The `actions:` of planners name declared actions that are not
    /// planners themselves (a plan does not plan), each once (E0801).
    pub(crate) fn resolve_planner_actions(&mut self) {
        for (index, planner, names) in std::mem::take(&mut self.pending_planners) {
            let mut ids: Vec<ActionId> = Vec::with_capacity(names.len());
            for id in &names {
                match self.action_names.get(&id.name).copied() {
                    Some(a)
                        if matches!(self.actions[a.0 as usize].kind, ActionKind::Planner(_)) =>
                    {
                        let declared = self.actions[a.0 as usize].span;
                        self.error(
                            Diagnostic::error(
                                Code::PlannerList,
                                id.span,
                                format!("`{}` is a `planner`; a plan may not call one", id.name),
                            )
                            .with_label("a planner")
                            .with_related(declared, "declared here")
                            .with_hint(
                                "plans do not nest: list the actions the plan itself may call",
                            ),
                        );
                    }
                    Some(a) if ids.contains(&a) => self.error(
                        Diagnostic::error(
                            Code::PlannerList,
                            id.span,
                            format!(
                                "`{}` is listed twice in the actions of `{planner}`",
                                id.name
                            ),
                        )
                        .with_label("listed again"),
                    ),
                    Some(a) => ids.push(a),
                    None => {
                        let mut names: Vec<String> = self
                            .actions
                            .iter()
                            .filter(|a| !matches!(a.kind, ActionKind::Planner(_)))
                            .map(|a| a.name.clone())
                            .collect();
                        names.sort();
                        let hint = self.unknown_name_hint(
                            &id.name,
                            &names,
                            "actions",
                            "declare the actions a plan may call (`llm`, `pure`, `effect`, `human`, `tool`)",
                        );
                        self.error(
                            Diagnostic::error(
                                Code::PlannerList,
                                id.span,
                                format!("no action named `{}`", id.name),
                            )
                            .with_label("unknown action")
                            .with_hint(hint),
                        );
                    }
                }
            }
            if let Some(ir::Action {
                kind: ActionKind::Planner(p),
                ..
            }) = self.actions.get_mut(index)
            {
                p.actions = ids;
            }
        }
    }
}

/// Checks `source`, a plan a model wrote for the planner `planner` of
/// `program` (see the module docs). `Ok` is the plan as a program whose one
/// workflow is the plan; `Err` holds every diagnostic, located in `source`.
pub fn check_plan(
    program: &Program,
    planner: ActionId,
    source: &str,
) -> Result<Program, Vec<Diagnostic>> {
    let Some(ir::Action {
        name: planner_name,
        params,
        outputs,
        kind: ActionKind::Planner(spec),
        ..
    }) = program.actions.get(planner.0 as usize)
    else {
        return Err(vec![Diagnostic::error(
            Code::PlanShape,
            Span::default(),
            "the action is not a planner",
        )]);
    };
    let whole = Span::new(0, source.len());
    if source.len() > MAX_PLAN_BYTES {
        return Err(vec![
            Diagnostic::error(
                Code::PlanShape,
                Span::new(0, 0),
                format!(
                    "the plan is {} bytes long; a plan may be at most {MAX_PLAN_BYTES}",
                    source.len()
                ),
            )
            .with_hint("write a shorter workflow"),
        ]);
    }
    let parsed = troupe_syntax::parse(source);
    let mut diagnostics: Vec<Diagnostic> = parsed
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .cloned()
        .collect();
    let mut workflows = Vec::new();
    for item in &parsed.file.items {
        let (span, what) = match item {
            ast::Item::Workflow(w) => {
                workflows.push(w);
                continue;
            }
            ast::Item::Import(i) => (i.span, "an `import`"),
            ast::Item::Action(a) => (a.span, "an action declaration"),
            ast::Item::Enum(e) => (e.name.span, "an `enum` declaration"),
            ast::Item::Record(r) => (r.name.span, "a `record` declaration"),
            ast::Item::Mcp(m) => (m.name.span, "an `mcp` declaration"),
        };
        diagnostics.push(
            Diagnostic::error(
                Code::PlanShape,
                span,
                format!("a plan may not contain {what}"),
            )
            .with_hint("a plan is one `workflow` over the listed actions and nothing else"),
        );
    }
    match workflows.len() {
        1 => {}
        0 if diagnostics.is_empty() => diagnostics.push(
            Diagnostic::error(Code::PlanShape, whole, "the plan has no workflow").with_hint(
                format!(
                    "write `workflow plan({}) {{ … }}`",
                    signature(program, params)
                ),
            ),
        ),
        0 => {}
        _ => {
            for w in &workflows[1..] {
                diagnostics.push(
                    Diagnostic::error(Code::PlanShape, w.name.span, "a plan is one workflow")
                        .with_hint("merge the workflows into one"),
                );
            }
        }
    }
    if !diagnostics.is_empty() || workflows.len() != 1 {
        return Err(diagnostics);
    }
    let decl = workflows[0];
    let lines = troupe_syntax::LineIndex::new(source);
    let mut checker = seeded(program, source, &lines, &spec.actions);
    let checked = checker.workflow(decl);
    let mut diagnostics = checker.diagnostics;
    // A call of a declared but unlisted action: say so, not "unknown".
    for d in &mut diagnostics {
        if d.code != Code::UnknownAction {
            continue;
        }
        let name = source
            .get(d.span.start as usize..d.span.end as usize)
            .unwrap_or_default();
        if program.actions.iter().any(|a| a.name == name) {
            d.code = Code::PlanAction;
            d.message = format!("`{name}` is not an action `{planner_name}` lets a plan call");
            d.label = Some("not allowed".into());
            d.hint = Some(format!("a plan may call {}", allowed(program, spec)));
        }
    }
    let Some(wf) = checked.filter(|_| !diagnostics.iter().any(Diagnostic::is_error)) else {
        return Err(diagnostics);
    };
    let mut errors = Vec::new();
    for l in &wf.lifelines {
        if !spec.lifelines.contains(&l.name) {
            errors.push(
                Diagnostic::error(
                    Code::PlanLifeline,
                    l.span,
                    format!(
                        "`{}` is not a lifeline `{planner_name}` lets a plan use",
                        l.name
                    ),
                )
                .with_label("not allowed")
                .with_hint(format!("a plan may use {}", list(&spec.lifelines))),
            );
        }
    }
    let types = &program.types;
    let inputs: Vec<(&str, &Type)> = wf
        .inputs
        .iter()
        .map(|v| {
            let var = &wf.vars[v.0 as usize];
            (var.name.as_str(), &var.ty)
        })
        .collect();
    let wanted: Vec<(&str, &Type)> = params.iter().map(|p| (p.name.as_str(), &p.ty)).collect();
    if inputs != wanted {
        errors.push(
            Diagnostic::error(
                Code::PlanSignature,
                decl.name.span,
                format!(
                    "the plan's inputs are ({}); they must be the parameters of `{planner_name}`",
                    inputs
                        .iter()
                        .map(|(n, t)| format!("{n}: {}", types.display(t)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_hint(format!(
                "write `workflow {}({})`",
                decl.name.name,
                signature(program, params)
            )),
        );
    }
    let results: Vec<&Type> = wf
        .results
        .iter()
        .map(|v| &wf.vars[v.0 as usize].ty)
        .collect();
    let wanted: Vec<&Type> = outputs.iter().map(|p| &p.ty).collect();
    if results != wanted {
        errors.push(
            Diagnostic::error(
                Code::PlanSignature,
                decl.name.span,
                format!(
                    "the plan returns ({}); `{planner_name}` needs ({})",
                    results
                        .iter()
                        .map(|t| types.display(t).to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    wanted
                        .iter()
                        .map(|t| types.display(t).to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_hint("end the plan with `return (x @ A, …)`: one variable per output, in order"),
        );
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Program {
        types: program.types.clone(),
        actions: program.actions.clone(),
        workflows: vec![wf],
    })
}

/// A checker that knows `program`'s types and, by name, only `allowed` of
/// its actions (every action keeps its id).
fn seeded<'a>(
    program: &Program,
    source: &'a str,
    lines: &'a troupe_syntax::LineIndex,
    allowed: &[ActionId],
) -> Checker<'a> {
    let mut type_names = HashMap::new();
    let mut enum_values: HashMap<String, Vec<(crate::types::EnumId, u32)>> = HashMap::new();
    for (i, e) in program.types.enums.iter().enumerate() {
        let id = crate::types::EnumId(i as u32);
        type_names.insert(e.name.clone(), Type::Enum(id));
        for (k, v) in e.values.iter().enumerate() {
            enum_values
                .entry(v.clone())
                .or_default()
                .push((id, k as u32));
        }
    }
    for (i, r) in program.types.records.iter().enumerate() {
        type_names.insert(
            r.name.clone(),
            Type::Record(crate::types::RecordId(i as u32)),
        );
    }
    let action_names = allowed
        .iter()
        .map(|id| (program.action(*id).name.clone(), *id))
        .collect();
    Checker {
        source,
        lines,
        file_starts: vec![0],
        diagnostics: Vec::new(),
        error_count: 0,
        types: program.types.clone(),
        type_names,
        enum_values,
        actions: program.actions.clone(),
        action_names,
        servers: HashMap::new(),
        wf: crate::workflow::WfState::default(),
        callees: std::collections::BTreeMap::new(),
        pending_tools: Vec::new(),
        pending_planners: Vec::new(),
        cyclic: std::collections::HashSet::new(),
        suggestion_budget: std::cell::Cell::new(crate::suggest::SUGGESTION_BUDGET),
        causal: crate::cpl::Deferral::default(),
    }
}

fn list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn allowed(program: &Program, spec: &PlannerAction) -> String {
    let names: Vec<String> = spec
        .actions
        .iter()
        .map(|a| program.action(*a).name.clone())
        .collect();
    list(&names)
}

/// `task: Text @ A, …` with the first allowed lifeline as a placeholder.
fn signature(program: &Program, params: &[Param]) -> String {
    params
        .iter()
        .map(|p| format!("{}: {} @ …", p.name, program.types.display(&p.ty)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a model is told besides the planner's prompt: the language subset
/// a plan is written in, the signature the plan must have, the actions it
/// may call (with their signatures and kinds) and the lifelines it may use.
pub fn instructions(program: &Program, planner: ActionId) -> String {
    use std::fmt::Write;
    let action = program.action(planner);
    let ActionKind::Planner(spec) = &action.kind else {
        return String::new();
    };
    let t = |ty: &Type| program.types.display(ty).to_string();
    let mut out = String::new();
    out.push_str(
        "Answer with the source of one troupe workflow and nothing else (no prose, no code fence).\n\
         A workflow is a message sequence chart between lifelines:\n\
         \x20 workflow plan(x: T @ A) {\n\
         \x20   lifelines A, B                      // optional: fixes the order\n\
         \x20   msg A(x) -> B(y)                    // A sends its variable x; B binds y\n\
         \x20   act B: z = some_action(y)           // B calls an action on its own variables\n\
         \x20   act B: n = 1 + 2                    // or computes an expression\n\
         \x20   if c @ B { … } else { … }           // B decides, over its own variables\n\
         \x20   while c @ B { … } exit { … }        // B decides each round\n\
         \x20   return z @ B                        // last: the result(s), `return (a @ A, b @ B)`\n\
         \x20 }\n\
         A lifeline can only use variables it bound itself (inputs, received, computed).\n\
         Expressions: literals (true, 42, 0.5, \"text\"), variables, record fields t.f,\n\
         == != < <= > >=, + - * / %, and or not. No self-messages.\n\n",
    );
    let _ = writeln!(
        out,
        "The workflow must be declared as `workflow plan({})`, with every input at one of the lifelines below, and return {} value(s) of type(s) ({}) in this order.",
        signature(program, &action.params),
        action.outputs.len(),
        action
            .outputs
            .iter()
            .map(|p| t(&p.ty))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(out, "Lifelines you may use: {}.", spec.lifelines.join(", "));
    out.push_str("Actions you may call (no others):\n");
    for id in &spec.actions {
        let a = program.action(*id);
        let params = a
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, t(&p.ty)))
            .collect::<Vec<_>>()
            .join(", ");
        let outs = match a.outputs.as_slice() {
            [] => String::new(),
            [one] if one.name == "result" => format!(" -> {}", t(&one.ty)),
            many => format!(
                " -> ({})",
                many.iter()
                    .map(|p| format!("{}: {}", p.name, t(&p.ty)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let _ = writeln!(out, "  {} {}({params}){outs}", a.kind.label(), a.name);
    }
    let decls = type_decls(&program.types);
    if !decls.is_empty() {
        out.push_str("Types:\n");
        out.push_str(&decls);
    }
    out
}

fn type_decls(types: &TypeTable) -> String {
    let mut out = String::new();
    for e in &types.enums {
        out.push_str(&format!(
            "  enum {} {{ {} }}\n",
            e.name,
            e.values.join(", ")
        ));
    }
    for r in &types.records {
        let fields = r
            .fields
            .iter()
            .map(|(n, ty)| format!("{n}: {}", types.display(ty)))
            .collect::<Vec<_>>()
            .join(", ");
        out.push_str(&format!("  record {} {{ {fields} }}\n", r.name));
    }
    out
}
