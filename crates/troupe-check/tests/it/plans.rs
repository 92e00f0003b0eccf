//! `check_plan`: generated plans are checked against their planner. Each
//! plan-time code (E0802–E0805) is triggered by at least two plans, each of
//! which yields exactly that code; hostile plans (not troupe, huge, deeply
//! nested, random bytes) are rejected with diagnostics, never a panic.

use troupe_check::ir::{ActionId, Program};
use troupe_check::plan::{MAX_PLAN_BYTES, check_plan, instructions};
use troupe_syntax::Code;

const PROGRAM: &str = r#"
enum Tone { plain, friendly }
llm search(query: Text) -> (notes: Text) { prompt: "Find facts about: {query}" }
llm summarize(notes: Text) -> (summary: Text) { prompt: "Summarize: {notes}" }
effect publish(text: Text) -> Bool extern
planner solve(task: Text) -> (answer: Text) {
  prompt: "Write a troupe workflow that answers: {task}"
  actions: [search, summarize]
  lifelines: [Researcher, Writer]
  retries: 3
}
workflow w(q: Text @ A) {
  act A: answer = solve(q)
  return answer @ A
}
"#;

fn program() -> (Program, ActionId) {
    let (program, diagnostics) = troupe_check::check_text(PROGRAM);
    let program = program.unwrap_or_else(|| panic!("{diagnostics:#?}"));
    let id = program
        .actions
        .iter()
        .position(|a| a.name == "solve")
        .unwrap();
    (program, ActionId(id as u32))
}

/// The codes of the errors a plan gets, sorted.
fn codes(plan: &str) -> Vec<Code> {
    let (program, solve) = program();
    match check_plan(&program, solve, plan) {
        Ok(_) => Vec::new(),
        Err(d) => {
            let mut c: Vec<Code> = d.iter().filter(|d| d.is_error()).map(|d| d.code).collect();
            c.sort();
            c
        }
    }
}

const GOOD: &str = "workflow plan(task: Text @ Researcher) {
  lifelines Researcher, Writer
  act Researcher: notes = search(task)
  msg Researcher(notes) -> Writer(notes)
  act Writer: summary = summarize(notes)
  return summary @ Writer
}";

#[test]
fn a_good_plan_checks_and_keeps_the_programs_actions() {
    let (program, solve) = program();
    let plan = check_plan(&program, solve, GOOD).unwrap();
    assert_eq!(plan.workflows.len(), 1);
    assert_eq!(
        plan.actions, program.actions,
        "the same actions, the same ids"
    );
    assert_eq!(plan.types, program.types);
    let names: Vec<&str> = plan.workflows[0]
        .lifelines
        .iter()
        .map(|l| l.name.as_str())
        .collect();
    assert_eq!(names, ["Researcher", "Writer"]);
}

#[test]
fn plan_shape_e0802() {
    for plan in [
        // A declaration beside the workflow.
        "llm extra(x: Text) -> Text { prompt: \"{x}\" }\nworkflow plan(task: Text @ Researcher) { return task @ Researcher }",
        // An import.
        "import \"other.troupe\"\nworkflow plan(task: Text @ Researcher) { return task @ Researcher }",
        // Two workflows.
        "workflow plan(task: Text @ Researcher) { return task @ Researcher }\nworkflow again(task: Text @ Writer) { return task @ Writer }",
        // No workflow at all.
        "",
        "// just a comment",
    ] {
        let c = codes(plan);
        assert!(
            !c.is_empty() && c.iter().all(|&c| c == Code::PlanShape),
            "{plan:?}: {c:?}"
        );
    }
    let huge = format!(
        "workflow plan(task: Text @ Researcher) {{\n{}  return task @ Researcher\n}}",
        "  act Researcher: n = 1\n".repeat(MAX_PLAN_BYTES / 20)
    );
    assert_eq!(codes(&huge), [Code::PlanShape]);
}

#[test]
fn plan_lifeline_e0803() {
    for plan in [
        "workflow plan(task: Text @ Hacker) { return task @ Hacker }",
        "workflow plan(task: Text @ Researcher) {\n  msg Researcher(task) -> Outsider(task)\n  return task @ Outsider\n}",
    ] {
        assert_eq!(codes(plan), [Code::PlanLifeline], "{plan}");
    }
}

#[test]
fn plan_signature_e0804() {
    for plan in [
        // The input renamed.
        "workflow plan(question: Text @ Researcher) { return question @ Researcher }",
        // An input too many.
        "workflow plan(task: Text @ Researcher, n: Int @ Researcher) { return task @ Researcher }",
        // No result.
        "workflow plan(task: Text @ Researcher) { act Researcher: n = 1 }",
        // A result of the wrong type.
        "workflow plan(task: Text @ Researcher) {\n  act Researcher: n = 1\n  return n @ Researcher\n}",
    ] {
        let c = codes(plan);
        assert!(
            !c.is_empty() && c.iter().all(|&c| c == Code::PlanSignature),
            "{plan}: {c:?}"
        );
    }
}

#[test]
fn plan_action_e0805_and_unknown_actions() {
    for plan in [
        // Declared, but not listed.
        "workflow plan(task: Text @ Researcher) {\n  act Researcher: ok = publish(task)\n  return task @ Researcher\n}",
        // The planner itself: a plan does not plan.
        "workflow plan(task: Text @ Researcher) {\n  act Researcher: a = solve(task)\n  return task @ Researcher\n}",
    ] {
        assert_eq!(codes(plan), [Code::PlanAction], "{plan}");
    }
    // Not declared at all: the ordinary E0401.
    assert_eq!(
        codes(
            "workflow plan(task: Text @ Researcher) {\n  act Researcher: a = rm_rf(task)\n  return task @ Researcher\n}"
        ),
        [Code::UnknownAction]
    );
}

#[test]
fn ordinary_errors_of_a_plan_are_the_ordinary_codes() {
    // Wrong arity of a listed action.
    assert_eq!(
        codes(
            "workflow plan(task: Text @ Researcher) {\n  act Researcher: notes = search(task)\n  act Researcher: s = summarize(notes, task)\n  return s @ Researcher\n}"
        ),
        [Code::ArgumentCount]
    );
    // A variable read where it is not bound.
    assert_eq!(
        codes(
            "workflow plan(task: Text @ Researcher) {\n  act Writer: s = summarize(task)\n  return s @ Writer\n}"
        ),
        [Code::UnboundVariable]
    );
}

#[test]
fn hostile_plans_are_diagnostics_not_panics() {
    let deep = format!(
        "workflow plan(task: Text @ Researcher) {{\n{}{}  return task @ Researcher\n}}",
        "  if true @ Researcher {\n".repeat(500),
        "  }\n".repeat(500)
    );
    let deep_expr = format!(
        "workflow plan(task: Text @ Researcher) {{\n  act Researcher: n = {}1{}\n  return task @ Researcher\n}}",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    let hostile: Vec<String> = vec![
        "Sure! Here is a plan: first search, then summarize.".into(),
        "```python\nprint('hello')\n```".into(),
        "{\"workflow\": \"plan\"}".into(),
        "workflow plan(".into(),
        "workflow plan(task: Text @ Researcher) {".into(),
        "}}}}{{{{".into(),
        "\u{0}\u{1}\u{feff}workflow".into(),
        "workflow plan(task: Text @ Researcher) { return task @ Researcher }\u{0}".into(),
        "x".repeat(MAX_PLAN_BYTES + 1),
        deep,
        deep_expr,
    ];
    for plan in &hostile {
        let c = codes(plan);
        assert!(
            !c.is_empty(),
            "{:?} was accepted",
            &plan[..plan.len().min(80)]
        );
    }
    // Random bytes, deterministically.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..300 {
        let len = (x % 400) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b"workflow plan(task: Text @ Researcher) { } act msg -> return @ ( ) , = \" \n"
                    [(x % 72) as usize]
            })
            .collect();
        let text = String::from_utf8_lossy(&bytes);
        let _ = codes(&text);
    }
}

#[test]
fn the_instructions_name_the_signature_actions_and_lifelines() {
    let (program, solve) = program();
    let text = instructions(&program, solve);
    assert!(text.contains("workflow plan(task: Text @ …)"), "{text}");
    assert!(
        text.contains("llm search(query: Text) -> (notes: Text)"),
        "{text}"
    );
    assert!(
        text.contains("llm summarize(notes: Text) -> (summary: Text)"),
        "{text}"
    );
    assert!(text.contains("Researcher, Writer"), "{text}");
    assert!(
        !text.contains("publish"),
        "an unlisted action is not offered: {text}"
    );
    assert!(text.contains("enum Tone { plain, friendly }"), "{text}");
}
