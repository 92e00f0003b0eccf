//! The `troupe` command line: check, project, chart and run coordinated
//! multi-agent workflows.

mod commands;
mod out;
mod render;
mod signals;
mod telemetry;
mod terminal;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

/// Runs allocate many small, short-lived objects (messages, action
/// futures); mimalloc serves them markedly faster than glibc's allocator
/// under the concurrent-run load (`troupe bench concurrent`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::io::IsTerminal;
use std::process::ExitCode;

/// troupe: provably coordinated LLM agents.
///
/// Write one global workflow (a message sequence chart) in a `.troupe` file;
/// troupe checks it, projects it to one local program per lifeline, and runs
/// them so that no run deadlocks or strays from the chart.
///
/// Exit status: 0 on success, 1 when a check finds errors or a run fails,
/// 2 for usage and I/O errors, 130 or 143 when SIGINT or SIGTERM stopped a
/// run at a step boundary (`troupe resume RUN` continues it).
#[derive(Debug, Parser)]
#[command(
    name = "troupe",
    version,
    propagate_version = true,
    max_term_width = 100
)]
struct Cli {
    /// When to colour the output.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
    /// Which logs to print on stderr, as `RUST_LOG` writes it: `info`,
    /// `troupe_host=debug,warn`, `off`. Default: `TROUPE_LOG`, then
    /// `RUST_LOG`, then `warn`.
    #[arg(long, global = true, value_name = "FILTER")]
    log: Option<String>,
    /// Export traces (run → lifeline → step → model call, with token
    /// counts) over OTLP/HTTP to this collector, e.g.
    /// `http://127.0.0.1:4318`. Default: `OTEL_EXPORTER_OTLP_ENDPOINT`, then
    /// `[telemetry] otlp` in troupe.toml; none.
    #[arg(long, global = true, value_name = "URL")]
    otlp: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Parse and type-check workflow files.
    ///
    /// Reports every error with its code, location and a hint. Exit status 0
    /// when all files are well-typed, 1 when any has an error, 2 when a file
    /// cannot be read.
    ///
    /// Example: troupe check examples/*.troupe
    Check(commands::check::CheckArgs),
    /// Run a workflow and print its result.
    ///
    /// With no model configured the mock model answers (deterministic,
    /// type-directed). Before it exits, `run` verifies that the run, with
    /// control messages erased, is a run of the workflow (⟦P⟧).
    ///
    /// Examples:
    ///   troupe run examples/counter.troupe --input limit=5 --trace
    ///   troupe run examples/consensus.troupe -i case="A refund request" --json
    ///   troupe run examples/local_approval.troupe -i request="New laptop" --answers answers.json
    #[command(verbatim_doc_comment)]
    Run(commands::run::RunArgs),
    /// Show the local program of each lifeline (the projection).
    ///
    /// Each lifeline's program: its sends, receives and actions, the owner's
    /// decisions with their control broadcasts, and the other lifelines'
    /// branches on the decisions they receive.
    Project(commands::project::ProjectArgs),
    /// Print the semantic interface of a workflow as JSON (for `troupe diff`).
    ///
    /// Its lifelines, inputs and results with their types, every statement
    /// with the constructs around it, and the signatures and prompts of the
    /// actions it uses.
    ///
    /// The snapshot holds no spans, comments, layout or paths: the same
    /// workflow gives the same bytes wherever its file lives and however
    /// it is formatted. Keep one beside a deployed workflow and compare
    /// later versions against it with `troupe diff`.
    ///
    /// Examples:
    ///   troupe snapshot examples/consensus.troupe
    ///   troupe snapshot examples/consensus.troupe -o consensus.snap.json
    ///   troupe snapshot run:3 --store .troupe/troupe.db
    #[command(verbatim_doc_comment)]
    Snapshot(commands::snapshot::SnapshotArgs),
    /// Compare two versions of a workflow, one line per change.
    ///
    /// What changed in its lifelines, inputs, results, actions, prompts and
    /// statements. Each side is a `.troupe` file, a snapshot JSON written by `troupe
    /// snapshot`, or a recorded run (`run:3`, `run-3`: the source it ran).
    /// Comments, layout and whitespace are never differences; prompt
    /// wording is, unless `--ignore prompts`. One line per change
    /// (`+` added, `-` removed, `~` changed, `>` moved), then a summary.
    ///
    /// Exit status: 0 when equal, 1 when they differ, 2 on errors (a file
    /// that does not check: its diagnostics are printed).
    ///
    /// Examples:
    ///   troupe diff old/review.troupe review.troupe
    ///   troupe diff consensus.snap.json examples/consensus.troupe --ignore prompts
    ///   troupe diff run:3 examples/consensus.troupe --store .troupe/troupe.db --json
    #[command(verbatim_doc_comment)]
    Diff(commands::snapshot::DiffArgs),
    /// Draw a workflow, or a recorded run, as a sequence chart (SVG or Mermaid).
    ///
    /// Examples:
    ///   troupe msc examples/consensus.troupe -o consensus.svg
    ///   troupe msc examples/consensus.troupe --format mermaid --show-control
    ///   troupe msc run-3 --store .troupe/troupe.db -o run-3.svg
    #[command(verbatim_doc_comment)]
    Msc(commands::project::MscArgs),
    /// Language models: `troupe models check` tries each configured model.
    #[command(subcommand)]
    Models(commands::models::ModelsCommand),
    /// Serve runs, live sequence charts and the human-task inbox on a web
    /// page, with Telegram and webhook notifications.
    ///
    /// Access needs a token (printed at start unless given with --token);
    /// binds to 127.0.0.1:7878 unless told otherwise.
    Serve(commands::serve::ServeArgs),
    /// MCP servers: import their tools as typed `tool` declarations.
    ///
    /// Examples:
    ///   troupe mcp import "uvx mcp-server-time" --name time -o time.troupe
    ///   troupe mcp import ../shared/data/mcp-tools/filesystem.json --from-json
    #[command(subcommand, verbatim_doc_comment)]
    Mcp(commands::mcp::McpCommand),
    /// List the runs of a store (`--prune KEEP` deletes old ended runs).
    Runs(commands::inspect::RunsArgs),
    /// Show one run: its status, owner, settings, recorded steps, the tasks
    /// it waits on, and its result or whole error.
    Status(commands::inspect::RunRefArgs),
    /// Print the recorded trace of a run (`--follow` to watch it live).
    Trace(commands::inspect::TraceArgs),
    /// List the human tasks waiting for an answer, with the type each expects.
    Tasks(commands::inspect::TasksArgs),
    /// Answer a human task: the first answer wins, from any process.
    ///
    /// The answer is read by the task's expected type (`troupe tasks` shows
    /// it) and refused, with an example, when it does not fit: the task then
    /// stays pending.
    ///
    /// Examples:
    ///   troupe answer task-1 --yes
    ///   troupe answer task-2 --value email
    ///   troupe answer task-3 --value 3                 (an Int)
    ///   troupe answer task-4 --json '{"name": "Ada"}'  (a record)
    #[command(verbatim_doc_comment)]
    Answer(commands::durable::AnswerArgs),
    /// Continue an unfinished run with its recorded source, inputs and
    /// settings (models, seed, deadlines, durability), redoing nothing that
    /// was recorded.
    ///
    /// Exactly one process runs a run: it holds the run's lease and renews
    /// it; a crashed owner's lease expires after 15 s (TROUPE_LEASE=5s
    /// changes it), then any process may resume the run. Options given here
    /// override the recorded settings from now on (and are recorded).
    Resume(commands::durable::ResumeArgs),
    /// Continue a failed run from its last durable step (after a transient
    /// failure: a model timeout, a server that was down).
    Retry(commands::durable::RetryArgs),
    /// Cancel a run: its in-flight actions stop, its pending tasks close,
    /// and the reason is recorded.
    Cancel(commands::durable::CancelArgs),
    /// Pause a run at its next step boundary (an effect in flight finishes
    /// first): it holds no lease and no process takes it up until
    /// `troupe unpause`.
    ///
    /// A run nobody drives is paused at once; a driven one is asked, and
    /// this waits for its owner (`--wait`).
    Pause(commands::pause::PauseArgs),
    /// Let a paused run go on: it is queued again, for `troupe resume` or
    /// any worker.
    Unpause(commands::pause::UnpauseArgs),
    /// Start a new run from a recorded one: the steps before `--at` are
    /// taken from it (no model, tool or person is asked again), the rest
    /// run live.
    ///
    /// The new run records where it came from (`troupe status` shows it)
    /// and is verified like any other. Inputs may be changed with `-i`.
    Fork(commands::fork::ForkArgs),
    /// Move unfinished runs to a new version of their workflow, with proof.
    ///
    /// A run moves when what it recorded, cut where it stands, is the
    /// start of a run of the new version (the same statements on every
    /// lifeline, decided the same way) and every recorded result is found
    /// there under its step: it then goes on under the new version, and no
    /// model, tool or person is asked again. Otherwise it stays on its
    /// version, and the first recorded event the new version cannot
    /// explain is named. Exit status 1 when a run stays.
    ///
    /// Examples:
    ///   troupe upgrade run-3 --to flow.troupe --dry-run
    ///   troupe upgrade run-3 --to flow.troupe
    ///   troupe upgrade --workflow publish --to flow.troupe --json
    #[command(verbatim_doc_comment)]
    Upgrade(commands::upgrade::UpgradeArgs),
    /// Delete runs with their events, steps and tasks.
    Delete(commands::durable::DeleteArgs),
    /// Settle an effect that started before a crash and never finished.
    ///
    /// `troupe status RUN` shows the step and the command to give.
    Resolve(commands::durable::ResolveArgs),
    /// Check a recorded run against the workflow's semantics (⟦P⟧).
    Verify(commands::inspect::RunRefArgs),
    /// Claim and drive runs from a shared store until stopped (a fleet).
    ///
    /// Any number of workers, on any machines, share one PostgreSQL store:
    /// each claims runnable runs (new ones queued with `troupe run --store
    /// URL --detach`, answered ones, and those whose worker died and whose
    /// lease expired), drives them, and renews their leases. SIGTERM or
    /// Ctrl-C drains: nothing more is claimed, the runs in flight get
    /// --drain to finish, the rest are handed back. A worker killed with
    /// SIGKILL loses nothing: its runs are resumed by the others once their
    /// leases expire (15 s; TROUPE_LEASE=5s changes it).
    ///
    /// Examples:
    ///   troupe worker --store postgres://troupe@db.internal/troupe
    ///   troupe worker --store postgres://troupe@127.0.0.1/troupe --concurrency 64 --labels gpu,eu
    #[command(verbatim_doc_comment)]
    Worker(commands::fleet::WorkerArgs),
    /// List the workers of a shared store: their labels, the runs they
    /// drive and the leases they hold, and how many runs wait.
    Workers(commands::fleet::WorkersArgs),
    /// List the project's schedules (`[[schedule]]` in troupe.toml) with
    /// their next tick and the last run each started.
    ///
    /// Workers and `troupe serve` keep the schedules: each tick starts one
    /// run, queued for any worker, however many of them run.
    Schedules(commands::schedules::SchedulesArgs),
    /// Explain a diagnostic code (e.g. `troupe explain E0301`), or list them all.
    Explain(commands::explain::ExplainArgs),
    /// Run benchmarks, each against a baseline measured in the same run.
    Bench(commands::bench::BenchArgs),
    /// Tool contracts: SGD services and MCP tool lists, the maps between
    /// them, the MCP+ lint and bisimulation.
    ///
    /// MCP+ is MCP with a contract per tool (in `_meta["dev.troupe/contract"]`
    /// or a sidecar file) covering four principles: semantic completeness,
    /// explicit action boundaries, failure modes and inter-tool relations.
    ///
    /// Examples:
    ///   troupe contracts lint ../shared/data/mcp-tools/filesystem.json
    ///   troupe contracts bisim ../shared/data/sgd/dev/schema.json
    #[command(subcommand, verbatim_doc_comment)]
    Contracts(commands::contracts::ContractsCommand),
    /// Start a project: a starter workflow, a commented `troupe.toml` and a
    /// `.gitignore` for the local store.
    ///
    /// Refuses to overwrite existing files unless given --force.
    Init(commands::init::InitArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    ///
    /// Example: troupe completions bash > ~/.local/share/bash-completion/completions/troupe
    Completions(commands::completions::CompletionsArgs),
    /// Language server for editors, over stdin/stdout (LSP).
    ///
    /// Diagnostics as `troupe check` reports them, hover, go to definition,
    /// references, completion, rename, code actions and the projection and
    /// chart of the workflow under the cursor. Editors start it themselves;
    /// see docs/editors.md for VS Code, Neovim and Helix.
    Lsp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    pub fn enabled_for_stdout(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => std::io::stdout().is_terminal() && colours_wanted(),
        }
    }

    pub fn enabled_for_stderr(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => std::io::stderr().is_terminal() && colours_wanted(),
        }
    }
}

/// Whether the environment lets a terminal have colours: not when
/// `NO_COLOR` is set to anything but the empty string (no-color.org), nor
/// on a `dumb` terminal.
fn colours_wanted() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

/// How a command ended, as the process exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    Success,
    Failure,
    Usage,
    /// Stopped by this signal (SIGINT, SIGTERM): exit 128 + its number.
    Signalled(i32),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `--help`, `--version` and usage errors, printed by clap: a write
        // error (a full disk) is reported; a closed pipe ends quietly.
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            return match e.print() {
                Ok(()) => ExitCode::from(code),
                Err(io) if io.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(code),
                Err(io) => {
                    crate::note!("error: cannot write the help: {io}");
                    ExitCode::from(2)
                }
            };
        }
    };
    let _telemetry = match telemetry::init(cli.log.as_deref(), cli.otlp.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            crate::note!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Check(args) => commands::check::run(&args, cli.color),
        Command::Run(args) => commands::run::run(&args, cli.color),
        Command::Runs(args) => commands::inspect::runs(&args),
        Command::Mcp(cmd) => commands::mcp::run(cmd),
        Command::Serve(args) => commands::serve::run(args),
        Command::Models(cmd) => commands::models::run(&cmd),
        Command::Project(args) => commands::project::project(&args, cli.color),
        Command::Msc(args) => commands::project::msc(&args, cli.color),
        Command::Snapshot(args) => commands::snapshot::snapshot(&args, cli.color),
        Command::Diff(args) => commands::snapshot::diff(&args, cli.color),
        Command::Status(args) => commands::inspect::status(&args),
        Command::Trace(args) => commands::inspect::trace(&args),
        Command::Tasks(args) => commands::inspect::tasks(&args),
        Command::Answer(args) => commands::durable::answer(&args, cli.color),
        Command::Resume(args) => commands::durable::resume(&args, cli.color),
        Command::Retry(args) => commands::durable::retry(&args, cli.color),
        Command::Cancel(args) => commands::durable::cancel(&args, cli.color),
        Command::Pause(args) => commands::pause::pause(&args),
        Command::Unpause(args) => commands::pause::unpause(&args),
        Command::Fork(args) => commands::fork::fork(&args, cli.color),
        Command::Upgrade(args) => commands::upgrade::upgrade(&args, cli.color),
        Command::Delete(args) => commands::durable::delete(&args, cli.color),
        Command::Resolve(args) => commands::durable::resolve(&args, cli.color),
        Command::Verify(args) => commands::inspect::verify(&args),
        Command::Worker(args) => commands::fleet::worker(&args),
        Command::Workers(args) => commands::fleet::workers(&args),
        Command::Schedules(args) => commands::schedules::schedules(&args),
        Command::Explain(args) => commands::explain::run(&args),
        Command::Bench(args) => commands::bench::run(&args),
        Command::Contracts(cmd) => commands::contracts::run(cmd),
        Command::Init(args) => commands::init::run(&args),
        Command::Completions(args) => commands::completions::run(&args, Cli::command()),
        Command::Lsp => commands::lsp::run(),
    };
    match result {
        Ok(ExitStatus::Success) => ExitCode::SUCCESS,
        Ok(ExitStatus::Failure) => ExitCode::from(1),
        Ok(ExitStatus::Usage) => ExitCode::from(2),
        Ok(ExitStatus::Signalled(n)) => ExitCode::from((128 + n) as u8),
        // A closed pipe (`troupe runs | head -1`) ends the command quietly.
        Err(e) if out::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            crate::note!("error: {}", terminal::sanitize(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}
