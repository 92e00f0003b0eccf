//! Plans in charts: the accepted plan of each `planner` call of a recorded
//! run, drawn as a nested box (a [`FrameKind::Plan`] frame) right after the
//! planner's action, over columns of the plan's own lifelines.
//!
//! The plan's chart is its global workflow's (every branch), drawn from the
//! journaled source checked again against the run's program; a source that
//! no longer checks is drawn as a box that says so.

use super::{Chart, ChartOptions, FrameKind, Item, workflow_chart};
use troupe_check::ir::{ActionId, ActionKind, Program, Workflow};

/// One recorded plan: the planner call's step key (`Desk/solve#0`) and the
/// accepted plan's source.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedPlan {
    pub step: String,
    pub source: String,
}

/// Draws each plan into `chart`, the chart of a run of `workflow`.
pub fn nest_plans(
    chart: &mut Chart,
    program: &Program,
    workflow: &Workflow,
    plans: &[RecordedPlan],
) {
    for plan in plans {
        let Some((lifeline, rest)) = plan.step.split_once('/') else {
            continue;
        };
        let (action, occurrence) = match rest.rsplit_once('#') {
            Some((a, n)) => (a, n.parse::<usize>().unwrap_or(0)),
            None => (rest, 0),
        };
        let Some(owner) = workflow.lifelines.iter().position(|l| l.name == lifeline) else {
            continue;
        };
        let Some(id) = program
            .actions
            .iter()
            .position(|a| a.name == action && matches!(a.kind, ActionKind::Planner(_)))
        else {
            continue;
        };
        let inner = match troupe_check::plan::check_plan(program, ActionId(id as u32), &plan.source)
        {
            Ok(p) => workflow_chart(&p, &p.workflows[0], &ChartOptions::default()),
            Err(_) => Chart {
                title: String::new(),
                lifelines: Vec::new(),
                items: Vec::new(),
            },
        };
        let label = format!("plan of {action} at {lifeline}");
        nest(chart, owner, action, occurrence, &label, &inner);
    }
}

/// Puts `inner` in a plan frame after the `occurrence`-th note of `owner`
/// that calls `action` (at the end when there is none).
fn nest(
    chart: &mut Chart,
    owner: usize,
    action: &str,
    occurrence: usize,
    label: &str,
    inner: &Chart,
) {
    let base = chart.lifelines.len();
    for name in &inner.lifelines {
        let taken = chart.lifelines.contains(name);
        chart.lifelines.push(if taken {
            format!("{name} (plan)")
        } else {
            name.clone()
        });
    }
    let call = format!("{action}(");
    let at = chart
        .items
        .iter()
        .enumerate()
        .filter(|(_, item)| matches!(item, Item::Note { over, text } if *over == owner && text.contains(&call)))
        .nth(occurrence)
        .map_or(chart.items.len(), |(i, _)| i + 1);
    let shift = |c: usize| base + c;
    let mut items = vec![Item::FrameStart {
        kind: FrameKind::Plan,
        label: label.to_owned(),
        owner: Some(if inner.lifelines.is_empty() {
            owner
        } else {
            base
        }),
    }];
    if inner.lifelines.is_empty() {
        items.push(Item::Note {
            over: owner,
            text: "the recorded plan no longer checks".into(),
        });
    }
    items.extend(inner.items.iter().map(|item| match item {
        Item::Message {
            from,
            to,
            label,
            control,
        } => Item::Message {
            from: shift(*from),
            to: shift(*to),
            label: label.clone(),
            control: *control,
        },
        Item::Note { over, text } => Item::Note {
            over: shift(*over),
            text: text.clone(),
        },
        Item::FrameStart { kind, label, owner } => Item::FrameStart {
            kind: *kind,
            label: label.clone(),
            owner: owner.map(shift),
        },
        Item::Ref { from, to, text } => Item::Ref {
            from: shift(*from),
            to: shift(*to),
            text: text.clone(),
        },
        other => other.clone(),
    }));
    items.push(Item::FrameEnd);
    chart.items.splice(at..at, items);
}
