//! A recorded plan drawn as a nested box: a `plan` frame right after the
//! planner's action, over columns of the plan's own lifelines, in Mermaid
//! (a tinted `rect`, balanced, only lines Mermaid knows) and SVG.

use troupe_msc::chart::plan::{RecordedPlan, nest_plans};
use troupe_msc::chart::{mermaid, svg};
use troupe_msc::{ChartOptions, FrameKind, Item, workflow_chart};

fn example() -> (troupe_check::ir::Program, String) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let text = std::fs::read_to_string(dir.join("planner.troupe")).unwrap();
    let (program, d) = troupe_check::check_text(&text);
    let script: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("scripts/planner.json")).unwrap())
            .unwrap();
    let plan = script["solve"][1].as_str().unwrap().to_owned();
    (program.unwrap_or_else(|| panic!("{d:#?}")), plan)
}

/// Blocks balance and every line is one Mermaid knows.
fn well_formed(text: &str) {
    let mut depth = 0i32;
    for line in text.lines().skip(1) {
        let t = line.trim();
        if t.starts_with("loop ") || t.starts_with("alt ") || t.starts_with("rect rgb(") {
            depth += 1;
        } else if t == "end" {
            depth -= 1;
            assert!(depth >= 0, "unbalanced: {text}");
        } else {
            assert!(
                t.starts_with("participant ")
                    || t.starts_with("Note over P")
                    || t.starts_with("else ")
                    || t.contains("->>")
                    || t.contains("--)"),
                "unknown line {t:?}"
            );
        }
    }
    assert_eq!(depth, 0, "{text}");
}

#[test]
fn a_plan_is_a_nested_box_after_its_planner_call() {
    let (program, plan) = example();
    let wf = &program.workflows[0];
    let mut chart = workflow_chart(&program, wf, &ChartOptions::default());
    let before = chart.clone();
    nest_plans(
        &mut chart,
        &program,
        wf,
        &[RecordedPlan {
            step: "Desk/solve#0".into(),
            source: plan,
        }],
    );
    assert_eq!(chart.lifelines, ["User", "Desk", "Researcher", "Writer"]);
    let call = before
        .items
        .iter()
        .position(|i| matches!(i, Item::Note { over: 1, text } if text.contains("solve(")))
        .unwrap();
    // Everything before the call and after it is unchanged; the frame is in between.
    assert_eq!(chart.items[..=call], before.items[..=call]);
    assert!(matches!(
        &chart.items[call + 1],
        Item::FrameStart { kind: FrameKind::Plan, label, .. } if label == "plan of solve at Desk"
    ));
    let end = chart.items.len() - (before.items.len() - call - 1) - 1;
    assert_eq!(chart.items[end], Item::FrameEnd);
    assert_eq!(chart.items[end + 1..], before.items[call + 1..]);
    // The plan's message goes from Researcher (column 2) to Writer (3).
    assert!(
        chart.items[call + 1..end]
            .iter()
            .any(|i| matches!(i, Item::Message { from: 2, to: 3, .. }))
    );
    let m = mermaid::render(&chart);
    well_formed(&m);
    assert!(m.contains("rect rgb(253, 242, 248)"), "{m}");
    assert!(m.contains("Note over P2: plan of solve at Desk"), "{m}");
    let s = svg::render(&chart);
    assert!(s.contains("plan of solve at Desk"), "{s}");
    assert!(s.contains("Researcher") && s.contains("Writer"));
}

#[test]
fn a_plan_that_no_longer_checks_is_a_box_that_says_so() {
    let (program, _) = example();
    let wf = &program.workflows[0];
    let mut chart = workflow_chart(&program, wf, &ChartOptions::default());
    nest_plans(
        &mut chart,
        &program,
        wf,
        &[
            RecordedPlan {
                step: "Desk/solve#0".into(),
                source: "not a plan".into(),
            },
            // Unknown lifeline or action: nothing is drawn.
            RecordedPlan {
                step: "Nobody/solve#0".into(),
                source: String::new(),
            },
            RecordedPlan {
                step: "Desk/search#0".into(),
                source: String::new(),
            },
        ],
    );
    assert_eq!(chart.lifelines, ["User", "Desk"]);
    let m = mermaid::render(&chart);
    well_formed(&m);
    assert!(m.contains("the recorded plan no longer checks"), "{m}");
}
