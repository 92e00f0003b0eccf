//! `troupe project` and `troupe msc`: local programs and sequence charts.

use crate::render::{self, FileReport};
use crate::{ColorChoice, ExitStatus};
use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use troupe_check::ir::{Program, Workflow};
use troupe_msc::ChartOptions;
use troupe_store::{Durability, Store};

#[derive(Debug, Args)]
pub struct ProjectArgs {
    /// The `.troupe` file.
    pub file: PathBuf,
    /// Which workflow, when the file declares several.
    #[arg(long, value_name = "NAME")]
    pub workflow: Option<String>,
    /// Only this lifeline's program.
    #[arg(long, value_name = "LIFELINE")]
    pub lifeline: Option<String>,
    /// Print the programs as JSON.
    #[arg(long)]
    pub json: bool,
    /// Print the flat bytecode the runtime executes instead of the tree form.
    #[arg(long, conflicts_with = "json")]
    pub flat: bool,
    /// Print each `call`'s inlined instructions instead of one line for it.
    #[arg(long)]
    pub inline: bool,
}

/// Reads and checks a file; renders its diagnostics when it does not check.
fn load(file: &Path, color: ColorChoice) -> Result<Option<Program>> {
    let shown = file.display().to_string();
    let loaded = troupe_check::load_file(file).with_context(|| format!("cannot read {shown}"))?;
    let (program, diagnostics) = loaded.check();
    let text = loaded.text;
    if program.is_none() {
        let mut buf = Vec::new();
        render::render_text(
            &FileReport {
                path: &shown,
                text: &text,
                diagnostics: &diagnostics,
            },
            color.enabled_for_stderr(),
            &mut buf,
        );
        crate::out::note_raw(&String::from_utf8_lossy(&buf));
        crate::note!("error: {shown} does not check");
    }
    Ok(program)
}

fn pick<'p>(program: &'p Program, name: Option<&str>) -> Result<&'p Workflow> {
    match name {
        Some(n) => program
            .workflow(n)
            .with_context(|| format!("no workflow named `{n}`")),
        None => match program
            .own_workflows()
            .map(|(_, w)| w)
            .collect::<Vec<_>>()
            .as_slice()
        {
            [one] => Ok(one),
            [] => bail!("the file declares no workflow"),
            many => bail!(
                "the file has several workflows ({}); choose one with --workflow",
                many.iter()
                    .map(|w| w.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    }
}

pub fn project(args: &ProjectArgs, color: ColorChoice) -> Result<ExitStatus> {
    let Some(program) = load(&args.file, color)? else {
        return Ok(ExitStatus::Failure);
    };
    let wf = pick(&program, args.workflow.as_deref())?;
    let only = match &args.lifeline {
        Some(name) => Some(
            wf.lifeline_ids()
                .find(|l| wf.lifeline(*l).name == *name)
                .with_context(|| {
                    let names: Vec<_> = wf.lifelines.iter().map(|l| l.name.as_str()).collect();
                    format!(
                        "no lifeline `{name}`; the lifelines are {}",
                        names.join(", ")
                    )
                })?,
        ),
        None => None,
    };
    let projection = troupe_project::project(&program, wf)?;
    if args.json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&troupe_project::to_json(
                &projection,
                &program,
                wf,
                only
            ))?
        );
    } else if args.flat {
        for flat in projection.flatten() {
            if only.is_none_or(|l| l == flat.lifeline) {
                crate::outln!("{}", troupe_project::render_flat_text(&flat, &program, wf));
            }
        }
    } else {
        crate::out::print(&troupe_project::render_text_with(
            &projection,
            &program,
            wf,
            only,
            args.inline,
        ))?;
    }
    Ok(ExitStatus::Success)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ChartFormat {
    /// A self-contained SVG image.
    #[default]
    Svg,
    /// Mermaid `sequenceDiagram` text.
    Mermaid,
}

#[derive(Debug, Args)]
pub struct MscArgs {
    /// A `.troupe` file (the workflow's chart), or a recorded run such as
    /// `run-3` (the chart of what happened).
    pub source: String,
    /// Which workflow, when the file declares several.
    #[arg(long, value_name = "NAME")]
    pub workflow: Option<String>,
    #[arg(long, value_enum, default_value_t = ChartFormat::Svg)]
    pub format: ChartFormat,
    /// Write the chart to this file instead of standard output.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Also draw the control broadcasts of owned decisions (dotted arrows).
    #[arg(long)]
    pub show_control: bool,
    /// Draw each `call` expanded in a frame instead of as one box.
    #[arg(long)]
    pub inline: bool,
    /// The store of recorded runs.
    #[arg(long, value_name = "DB", default_value = crate::commands::durable::DEFAULT_STORE)]
    pub store: PathBuf,
}

pub fn msc(args: &MscArgs, color: ColorChoice) -> Result<ExitStatus> {
    use troupe_msc::chart::plan::{RecordedPlan, nest_plans};
    let opts = ChartOptions {
        show_control: args.show_control,
        inline: args.inline,
    };
    let path = Path::new(&args.source);
    let chart = if !path.exists()
        && let Some(run) = Store::parse_run_id(&args.source)
    {
        let store_path = crate::commands::durable::store_address(&args.store)?;
        if !troupe_store::exists(&store_path) {
            bail!(
                "no file {} and no store at {}",
                args.source,
                store_path.display()
            );
        }
        let store = Store::open(&store_path, Durability::Full)?;
        let detail = store.run(run)?;
        let (program, _) = troupe_check::check_text(&detail.source);
        let program = program.context("the recorded source no longer checks")?;
        let wf = pick(&program, Some(&detail.summary.workflow))?;
        let (events, _) = store.events(run, 0)?;
        let mut exec = troupe_msc::Execution::new(wf.lifelines.len());
        for (l, e) in events {
            if let Some(word) = exec.words.get_mut(l.0 as usize) {
                word.push(e);
            }
        }
        // A run that moved to other versions: where it moved, marked.
        let moves = troupe_host::chart_moves(&store, run, wf)?;
        let mut chart = troupe_msc::execution_chart_moves(&program, wf, &exec, &opts, &moves);
        // The plans of `planner` calls, as nested boxes.
        let plans: Vec<RecordedPlan> = detail
            .steps
            .iter()
            .filter(|s| s.kind == "plan")
            .filter_map(|s| {
                Some(RecordedPlan {
                    step: s.key.strip_suffix("/plan#0")?.to_owned(),
                    source: s.outputs.as_ref()?.get(0)?.as_str()?.to_owned(),
                })
            })
            .collect();
        nest_plans(&mut chart, &program, wf, &plans);
        chart
    } else {
        let Some(program) = load(path, color)? else {
            return Ok(ExitStatus::Failure);
        };
        let wf = pick(&program, args.workflow.as_deref())?;
        troupe_msc::workflow_chart(&program, wf, &opts)
    };
    let text = match args.format {
        ChartFormat::Svg => troupe_msc::chart::svg::render(&chart),
        ChartFormat::Mermaid => troupe_msc::chart::mermaid::render(&chart),
    };
    crate::out::write_or_print(args.output.as_deref(), &text)?;
    Ok(ExitStatus::Success)
}
