//! A fuzz suite for the binary itself (issue #21): random argument vectors
//! for every subcommand, random `--input-json` runs, and random raw HTTP to
//! a running `troupe serve`. Every case must end, within its time bound,
//! with exit status 0, 1 or 2 (never 101, never a signal), no "panicked",
//! and — when it fails — a message.
//!
//! The commands that serve until stopped by design (`serve`, `lsp`,
//! `mcp serve`, `trace --follow`, `run --detach`) and the benchmarks are
//! not given random arguments; `mcp import` and `mcp lock` only read
//! captures (`--from-json`), since their argument is otherwise a command to
//! start. Model providers point at a closed loopback port, so no case
//! reaches the network. The in-process targets, for volume, are in
//! `fuzz_surfaces.rs`.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The longest one command may take (a hang detector, not a benchmark).
const CASE_DEADLINE: Duration = Duration::from_secs(30);

/// A scratch directory with examples, a store with a finished run and a
/// run waiting for a person, a `troupe.toml` and a `tools/list` capture.
/// Removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    Scratch({
        let dir =
            std::env::temp_dir().join(format!("troupe-fuzz-cli-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
        for e in std::fs::read_dir(examples).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
            }
        }
        std::fs::write(
            dir.join("troupe.toml"),
            "[llm]\nmax_retries = 0\ntimeout_secs = 5\nconnect_timeout_secs = 2\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("tools.json"),
            r#"{"tools": [{"name": "book_ticket", "description": "Books a ticket.", "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}}]}"#,
        )
        .unwrap();
        let out = troupe(&dir, &["run", "counter.troupe", "-i", "limit=3", "--store"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        // A run waiting for a person (stopped there; its task stays pending).
        let ran = run_troupe(
            &dir,
            &[
                "run",
                "local_approval.troupe",
                "-i",
                "request=x",
                "--store",
                "--mock-externs",
            ],
        )
        .expect("the run waits");
        assert!(ran.waited, "{}", text(&ran.out));
        dir
    })
}

/// Runs the binary; a case that outlives [`CASE_DEADLINE`] is killed and
/// reported as a hang.
fn troupe(dir: &Path, args: &[&str]) -> Output {
    try_troupe(dir, args).unwrap_or_else(|| panic!("troupe {args:?} hangs"))
}

/// The binary's run: its output, and whether it was stopped while waiting
/// for a person (which a durable run does by design).
struct Ran {
    out: Output,
    waited: bool,
}

fn try_troupe(dir: &Path, args: &[&str]) -> Option<Output> {
    let ran = run_troupe(dir, args)?;
    Some(ran.out)
}

/// Runs the binary with its output in files, watching them: a run that
/// says it waits for a person is stopped there; one that outlives
/// [`CASE_DEADLINE`] is killed and `None` returned.
fn run_troupe(dir: &Path, args: &[&str]) -> Option<Ran> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let out_path = std::env::temp_dir().join(format!("troupe-fuzz-{}-{n}.out", std::process::id()));
    let err_path = std::env::temp_dir().join(format!("troupe-fuzz-{}-{n}.err", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("TROUPE_LEASE", "2s")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .env("OLLAMA_BASE_URL", "http://127.0.0.1:9/v1")
        .env("OPENROUTER_BASE_URL", "http://127.0.0.1:9/v1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("TELEGRAM_BOT_TOKEN")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("run troupe");
    let start = Instant::now();
    let mut waited = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        let err = std::fs::read(&err_path).unwrap_or_default();
        if String::from_utf8_lossy(&err).contains("waiting for task-") {
            waited = true;
            let _ = child.kill();
            break child.wait().ok();
        }
        if start.elapsed() > CASE_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = std::fs::read(&out_path).unwrap_or_default();
    let stderr = std::fs::read(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    Some(Ran {
        out: Output {
            status: status?,
            stdout,
            stderr,
        },
        waited,
    })
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 32,
        ..Config::default()
    })
}

fn report<T: std::fmt::Debug>(name: &str, result: Result<(), TestError<T>>) {
    if let Err(e) = result {
        let e = match e {
            TestError::Fail(why, input) => format!("{why}: {input:?}"),
            TestError::Abort(why) => format!("aborted: {why}"),
        };
        panic!("{name}: {}", e.chars().take(4_000).collect::<String>());
    }
}

/// How the cases ended: 0, 1, 2, and stopped while waiting for a person.
static ENDS: std::sync::Mutex<[u32; 4]> = std::sync::Mutex::new([0; 4]);

/// What a case must be: an exit status, no panic, words when it fails.
/// A run stopped while it waited for a person has only to have said so.
fn judge(args: &[String], ran: Option<Ran>) -> Result<(), TestCaseError> {
    let Some(Ran { out, waited }) = ran else {
        return Err(TestCaseError::fail(format!(
            "troupe {args:?} ran longer than {CASE_DEADLINE:?}"
        )));
    };
    let shown = text(&out);
    let short: String = shown.chars().take(1_500).collect();
    prop_assert!(!shown.contains("panicked"), "troupe {args:?}: {short}");
    if waited {
        ENDS.lock().unwrap()[3] += 1;
        return Ok(());
    }
    if let Some(c @ 0..=2) = out.status.code() {
        ENDS.lock().unwrap()[c as usize] += 1;
    }
    prop_assert!(
        matches!(out.status.code(), Some(0..=2)),
        "troupe {args:?} ended with {:?}: {short}",
        out.status
    );
    prop_assert!(!shown.contains("panicked"), "troupe {args:?}: {short}");
    if out.status.code() != Some(0) {
        prop_assert!(
            !shown.trim().is_empty(),
            "troupe {args:?} failed without a word"
        );
    }
    Ok(())
}

// ------------------------------------------------------------ argv

fn subcommand() -> impl Strategy<Value = Vec<&'static str>> {
    prop_oneof![
        Just(vec!["run"]),
        Just(vec!["check"]),
        Just(vec!["project"]),
        Just(vec!["msc"]),
        Just(vec!["explain"]),
        Just(vec!["runs"]),
        Just(vec!["status"]),
        Just(vec!["trace"]),
        Just(vec!["verify"]),
        Just(vec!["tasks"]),
        Just(vec!["answer"]),
        Just(vec!["resume"]),
        Just(vec!["retry"]),
        Just(vec!["cancel"]),
        Just(vec!["delete"]),
        Just(vec!["resolve"]),
        Just(vec!["models", "check"]),
        Just(vec!["contracts", "lint"]),
        Just(vec!["contracts", "lock"]),
        Just(vec!["contracts", "from-sgd"]),
        Just(vec!["contracts", "to-sgd"]),
        Just(vec!["contracts", "bisim"]),
        Just(vec!["mcp", "import", "--from-json"]),
        Just(vec!["mcp", "lock", "--from-json"]),
        Just(vec!["help"]),
        Just(vec![]),
    ]
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        // Files and runs that exist, and some that do not.
        prop_oneof![
            Just("counter.troupe"),
            Just("consensus.troupe"),
            Just("local_approval.troupe"),
            Just("train_booking.troupe"),
            Just("for_documents.troupe"),
            Just("tools.json"),
            Just("train_booking.contracts.json"),
            Just("missing.troupe"),
            Just("/dev/null"),
            Just("-"),
            Just("."),
            Just("run-1"),
            Just("run-2"),
            Just("run-999"),
            Just("task-1"),
            Just("task-7"),
            Just("E0301"),
            Just("W0605"),
        ]
        .prop_map(str::to_owned),
        // Flags of the subcommands (and some that no subcommand has).
        prop_oneof![
            Just("--json"),
            Just("--trace"),
            Just("--store"),
            Just("--new"),
            Just("--mock-externs"),
            Just("--deny-unverified"),
            Just("--yes"),
            Just("--no"),
            Just("--value"),
            Just("--by"),
            Just("--done"),
            Just("--retry"),
            Just("--lifeline"),
            Just("--flat"),
            Just("--format"),
            Just("--show-control"),
            Just("-o"),
            Just("-i"),
            Just("--input"),
            Just("--input-json"),
            Just("--llm"),
            Just("--llm-for"),
            Just("--timeout"),
            Just("--seed"),
            Just("--prune"),
            Just("--durability"),
            Just("--select"),
            Just("--ignore"),
            Just("--tool"),
            Just("--lock"),
            Just("--color"),
            Just("--all"),
            Just("--workflow"),
            Just("--answers"),
            Just("--help"),
            Just("--version"),
            Just("--bogus"),
            Just("--"),
        ]
        .prop_map(str::to_owned),
        // Values, hostile ones included.
        prop_oneof![
            Just("limit=3"),
            Just("limit=-1"),
            Just("limit=99999999999999999999"),
            Just("limit=NaN"),
            Just("case=x"),
            Just("request=a boat"),
            Just("x="),
            Just("="),
            Just("{\"limit\": 2}"),
            Just("{\"limit\": 1e400}"),
            Just("[1, 2"),
            Just("mock"),
            Just("openai:gpt-x"),
            Just("ollama:qwen"),
            Just("nonsense:"),
            Just("A=mock"),
            Just("svg"),
            Just("mermaid"),
            Just("sarif"),
            Just("full"),
            Just("normal"),
            Just("1s"),
            Just("0s"),
            Just("99999999999999999999s"),
            Just("-5"),
            Just("0"),
            Just("true"),
            Just("never"),
            Just("always"),
        ]
        .prop_map(str::to_owned),
        "[a-z0-9=:._-]{0,12}",
        "\\PC{0,8}",
        Just("\u{1b}[2J\u{7}".to_owned()),
        Just("x".repeat(5_000)),
    ]
}

/// A command line that clap accepts, mostly: for each subcommand, slots of
/// alternatives (an empty one leaves the slot out), filled by `picks`.
fn well_formed(sub: usize, picks: &[u8]) -> Vec<String> {
    const FILES: &[&str] = &[
        "counter.troupe",
        "consensus.troupe",
        "local_approval.troupe",
        "train_booking.troupe",
        "for_documents.troupe",
        "reviewed_execution.troupe",
        "missing.troupe",
    ];
    const RUNS: &[&str] = &["run-1", "run-2", "2", "run-999", "run-0", "x"];
    const TASKS: &[&str] = &["task-1", "task-2", "task-0", "1"];
    let slots: Vec<Vec<&str>> = match sub % 19 {
        0 => vec![
            vec!["run"],
            FILES.to_vec(),
            vec![
                "",
                "-i|limit=3",
                "-i|limit=-2",
                "-i|limit=NaN",
                "-i|limit=1.5",
                "-i|case=x",
                "-i|request=a boat",
                "-i|x=1",
                "-i|=",
            ],
            vec!["", "--trace", "--json", "--deny-unverified"],
            vec!["", "--store", "--store|db2.db"],
            vec!["", "--new", "--mock-externs"],
            vec![
                "",
                "--seed|7",
                "--timeout|1s",
                "--timeout|0s",
                "--timeout|99999999999999999999s",
                "--llm|mock",
                "--llm|openai:gpt-x",
                "--llm-for|A=mock",
                "--durability|normal",
            ],
        ],
        1 => vec![vec!["check"], FILES.to_vec(), vec!["", "--json"]],
        2 => vec![
            vec!["project"],
            FILES.to_vec(),
            vec![
                "",
                "--json",
                "--flat",
                "--lifeline|A",
                "--lifeline|Approver",
                "--lifeline|Nobody",
            ],
        ],
        3 => vec![
            vec!["msc"],
            [FILES, RUNS].concat(),
            vec!["", "--format|svg", "--format|mermaid", "--format|png"],
            vec!["", "--show-control"],
            vec!["", "-o|chart.out"],
        ],
        4 => vec![
            vec!["explain"],
            vec!["", "E0301", "W0605", "E9999", "e0301", "x"],
        ],
        5 => vec![
            vec!["runs"],
            vec!["", "--json", "--prune|5", "--prune|-1", "--prune|x"],
        ],
        6 => vec![vec!["status"], RUNS.to_vec(), vec!["", "--json"]],
        7 => vec![vec!["trace"], RUNS.to_vec()],
        8 => vec![vec!["verify"], RUNS.to_vec()],
        9 => vec![vec!["tasks"], vec!["", "--json", "--all"]],
        10 => vec![
            vec!["answer"],
            TASKS.to_vec(),
            vec![
                "--yes",
                "--no",
                "--value|maybe",
                "--value|3",
                "--json|{",
                "--json|\"x\"",
                "--json|true",
            ],
            vec!["", "--by|alice", "--by|\u{1b}[2J"],
        ],
        11 => vec![vec!["resume", "retry", "cancel", "delete"], RUNS.to_vec()],
        12 => vec![
            vec!["resolve"],
            RUNS.to_vec(),
            vec!["1", "0", "s1", "-3"],
            vec!["--done|{}", "--done|[", "--done|{\"x\": 1}", "--retry"],
        ],
        13 => vec![
            vec!["contracts"],
            vec!["lint"],
            vec![
                "tools.json",
                "train_booking.contracts.json",
                "counter.troupe",
                "missing.json",
            ],
            vec![
                "",
                "--format|text",
                "--format|sarif",
                "--format|xml",
                "--json",
            ],
            vec!["", "--select|P001", "--ignore|zz", "--tool|book_ticket"],
        ],
        14 => vec![
            vec!["contracts"],
            vec!["lock", "from-sgd", "to-sgd", "bisim"],
            vec!["tools.json", "train_booking.contracts.json", "missing.json"],
            vec!["", "tools.json"],
            vec!["", "-o|out.json"],
        ],
        15 => vec![
            vec!["mcp"],
            vec!["import", "lock"],
            vec!["--from-json"],
            vec![
                "tools.json",
                "train_booking.contracts.json",
                "missing.json",
                "counter.troupe",
            ],
            vec!["", "-o|imported.troupe", "-o|lock.json"],
        ],
        16 => vec![
            vec!["models"],
            vec!["check"],
            vec![
                "",
                "--llm|mock",
                "--llm|openai:gpt-x",
                "--llm|ollama:q",
                "--llm|bogus:x",
            ],
        ],
        17 => vec![
            vec!["help", "--help", "--version", "-V"],
            vec!["", "run", "serve", "x"],
        ],
        _ => vec![
            vec!["run"],
            FILES.to_vec(),
            vec!["--input-json"],
            vec![
                "{\"limit\": 2}",
                "{\"case\": 1}",
                "[]",
                "{",
                "{\"limit\": 1e400}",
            ],
        ],
    };
    slots
        .iter()
        .zip(picks.iter().chain(std::iter::repeat(&0)))
        .map(|(alts, p)| alts[*p as usize % alts.len()])
        .filter(|a| !a.is_empty())
        .flat_map(|a| a.split('|'))
        .map(str::to_owned)
        .collect()
}

fn argv() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        // Well formed, now and then with a random word more.
        3 => (
            0..19usize,
            prop::collection::vec(any::<u8>(), 9),
            prop::option::weighted(0.2, word())
        )
            .prop_map(|(sub, picks, extra)| {
                let mut v = well_formed(sub, &picks);
                if let Some(w) = extra {
                    let at = picks[0] as usize % (v.len() + 1);
                    v.insert(at.max(1).min(v.len()), w);
                }
                v
            }),
        // A subcommand and random words.
        1 => (subcommand(), prop::collection::vec(word(), 0..7)).prop_map(|(sub, words)| {
            let mut v: Vec<String> = sub.iter().map(|s| s.to_string()).collect();
            v.extend(words);
            v
        }),
    ]
}

/// Arguments that make a command wait by design (`-o` onto the examples is
/// fine: they are copies).
fn excluded(args: &[String]) -> bool {
    // (`--answers FILE` reads a file of scripted answers: allowed, but a
    // random word is rarely one.)
    args.iter()
        .any(|a| a == "--follow" || a == "--detach" || a == "--http")
}

#[test]
fn random_argument_vectors() {
    let scratch = scratch("argv");
    let dir = &scratch.0;
    let started = Instant::now();
    let cases = std::cell::Cell::new(0u32);
    let result = runner(800).run(&argv(), |args| {
        if excluded(&args) {
            return Ok(());
        }
        cases.set(cases.get() + 1);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        judge(&args, run_troupe(dir, &refs))
    });
    report("argv", result);
    let ends = *ENDS.lock().unwrap();
    println!(
        "fuzz argv and input-json runs ended: exit 0 {}, exit 1 {}, exit 2 {}, waiting for a person {}",
        ends[0], ends[1], ends[2], ends[3]
    );
    println!(
        "fuzz argv: {} binary runs in {:.1} s",
        cases.get(),
        started.elapsed().as_secs_f64()
    );
}

// ------------------------------------------------------------ --input-json

fn json_text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("3".to_owned()),
        Just("-1".to_owned()),
        Just("1e400".to_owned()),
        Just("99999999999999999999".to_owned()),
        Just("0.5".to_owned()),
        Just("\"NaN\"".to_owned()),
        Just("\"x\"".to_owned()),
        Just("\"\\u001b[31m\"".to_owned()),
    ];
    let value = leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(
                (
                    prop_oneof![Just("limit"), Just("case"), Just("request"), Just("x")],
                    inner
                ),
                0..4
            )
            .prop_map(|kv| format!(
                "{{{}}}",
                kv.iter()
                    .map(|(k, v)| format!("\"{k}\": {v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            )),
        ]
    });
    prop_oneof![
        8 => value,
        1 => "\\PC{0,20}",
        1 => Just("[".repeat(200)),
    ]
}

#[test]
fn random_input_json_runs() {
    let scratch = scratch("input-json");
    let dir = &scratch.0;
    let started = Instant::now();
    let cases = std::cell::Cell::new(0u32);
    let files = [
        "counter.troupe",
        "consensus.troupe",
        "local_approval.troupe",
    ];
    let result = runner(60).run(&(0..3usize, json_text()), |(file, json)| {
        cases.set(cases.get() + 1);
        // Keep the loop short: a limit is capped by the workflow's own
        // inputs only, so large ones are left out of the counter's.
        let json = json.replace("99999999999999999999", "99999999999999999999.5");
        let args = vec![
            "run".to_owned(),
            files[file].to_owned(),
            "--input-json".to_owned(),
            json,
            "--mock-externs".to_owned(),
        ];
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        judge(&args, run_troupe(dir, &refs))
    });
    report("input-json runs", result);
    println!(
        "fuzz input-json runs: {} binary runs in {:.1} s",
        cases.get(),
        started.elapsed().as_secs_f64()
    );
}

// ------------------------------------------------------------ HTTP

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sends raw bytes to 127.0.0.1:`port` and reads the answer. A request the
/// server is still waiting to see the end of (a body shorter than its
/// length, a request line without its blank line) gets a second to answer;
/// then the client closes its side, and the server must close too. `None`
/// when the server kept the connection open past that.
fn exchange(port: u16, request: &[u8]) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_write_timeout(Some(CASE_DEADLINE)).unwrap();
    let _ = s.write_all(request);
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut closed_ours = false;
    let start = Instant::now();
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Some(out),
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                s.set_read_timeout(Some(CASE_DEADLINE)).unwrap();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if closed_ours || start.elapsed() > CASE_DEADLINE {
                    return None;
                }
                let _ = s.shutdown(std::net::Shutdown::Write);
                closed_ours = true;
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            }
            Err(_) => return Some(out),
        }
    }
}

fn raw_request() -> impl Strategy<Value = Vec<u8>> {
    let line = (
        prop_oneof![
            Just("GET"),
            Just("POST"),
            Just("HEAD"),
            Just("PUT"),
            Just("BREW")
        ],
        prop_oneof![
            Just("/"),
            Just("/inbox"),
            Just("/inbox/task-1"),
            Just("/api/runs"),
            Just("/api/tasks/task-1/answer"),
            Just("/hooks/answer/task-1"),
            Just("/runs/1"),
            Just("/login"),
            Just("/%ZZ"),
            Just("*"),
        ],
        prop_oneof![Just("HTTP/1.1"), Just("HTTP/1.0"), Just("HTTP/9"), Just("")],
    );
    prop_oneof![
        4 => (
            line,
            prop::collection::vec(
                prop_oneof![
                    Just("authorization: Bearer fuzz-serve".to_owned()),
                    Just("content-type: application/json".to_owned()),
                    Just("content-type: application/x-www-form-urlencoded".to_owned()),
                    Just("content-length: 5".to_owned()),
                    Just("content-length: 99999999999".to_owned()),
                    Just("transfer-encoding: chunked".to_owned()),
                    Just("origin: http://127.0.0.1:1".to_owned()),
                    Just("cookie: troupe_session=00".to_owned()),
                    "[ -~]{0,40}",
                ],
                0..5
            ),
            prop_oneof![
                Just(String::new()),
                Just("{\"yes\": true}".to_owned()),
                Just("choice=yes".to_owned()),
                "\\PC{0,40}"
            ]
        )
            .prop_map(|((m, p, v), headers, body)| {
                let mut r = format!("{m} {p} {v}\r\nhost: 127.0.0.1\r\n");
                for h in headers {
                    r.push_str(&h);
                    r.push_str("\r\n");
                }
                r.push_str("connection: close\r\n\r\n");
                r.push_str(&body);
                r.into_bytes()
            }),
        1 => prop::collection::vec(any::<u8>(), 0..400),
    ]
}

#[test]
fn random_http_to_a_running_serve() {
    let scratch = scratch("http");
    let dir = &scratch.0;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = std::cell::RefCell::new(Server(
        Command::new(env!("CARGO_BIN_EXE_troupe"))
            .args([
                "serve",
                "--bind",
                &format!("127.0.0.1:{port}"),
                "--no-notify",
            ])
            .current_dir(dir)
            .env("TROUPE_TOKEN", "fuzz-serve")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    ));
    let alive = b"GET /api/runs HTTP/1.1\r\nhost: x\r\nauthorization: Bearer fuzz-serve\r\nconnection: close\r\n\r\n";
    let start = Instant::now();
    while exchange(port, alive).is_none_or(|r| r.is_empty()) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "troupe serve did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let started = Instant::now();
    let cases = std::cell::Cell::new(0u32);
    let result = runner(60).run(&raw_request(), |request| {
        cases.set(cases.get() + 1);
        let answer = exchange(port, &request);
        prop_assert!(answer.is_some(), "no answer in time");
        let answer = String::from_utf8_lossy(answer.as_deref().unwrap_or_default()).to_string();
        prop_assert!(!answer.contains(" 500 "), "{answer}");
        prop_assert!(
            server.borrow_mut().0.try_wait().unwrap().is_none(),
            "troupe serve stopped"
        );
        let ok = exchange(port, alive).unwrap_or_default();
        prop_assert!(
            ok.starts_with(b"HTTP/1.1 200"),
            "serve stopped answering: {}",
            String::from_utf8_lossy(&ok)
        );
        Ok(())
    });
    report("serve http", result);
    // Still serving, and the store is intact.
    let r = exchange(port, alive).unwrap();
    let r = String::from_utf8_lossy(&r);
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert!(r.contains("run-1"), "{r}");
    println!(
        "fuzz serve http: {} requests to the binary in {:.1} s",
        cases.get(),
        started.elapsed().as_secs_f64()
    );
}
