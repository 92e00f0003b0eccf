//! The mock model exercises workflows end to end: across seeds, a
//! conditional on a mock `Bool` takes both branches, loops over mock answers
//! iterate and end within a bound, a seed replays the same run, and the
//! README's main command shows the consensus loop running several rounds.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn troupe(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("HOME", dir)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A conditional on one mock `Bool`, a `while more` loop and a
/// `while not stop` loop over another.
const PROBE: &str = r#"
llm ask(topic: Text) -> Bool { prompt: "Is {topic} fine?" }
llm again(topic: Text) -> Bool { prompt: "Another round on {topic}?" }

workflow probe(topic: Text @ A) {
  lifelines A, B
  msg A(topic) -> B(topic)
  act B: ok = ask(topic)
  if ok @ B {
    msg B("then") -> A(branch)
  } else {
    msg B("else") -> A(branch)
  }
  act A: more = again(topic)
  act A: rounds = 0
  while more @ A {
    act A: rounds = rounds + 1
    act A: more = again(topic)
  }
  act A: stop = again(topic)
  act A: waited = 0
  while not stop @ A {
    act A: waited = waited + 1
    act A: stop = again(topic)
  }
  return (branch @ A, rounds @ A, waited @ A)
}
"#;

/// The mock's occurrences that answer at random before cycling
/// (`troupe_llm::mock::EXPLORE`): a loop over a mock `Bool` makes at most
/// `EXPLORE + 2` calls, so runs at most `EXPLORE + 1` rounds.
const MAX_ROUNDS: i64 = troupe_llm::mock::EXPLORE as i64 + 1;

#[test]
fn across_seeds_both_branches_occur_and_loops_iterate_and_end() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("probe.troupe"), PROBE).unwrap();
    let run = |seed: u64| {
        let seed = seed.to_string();
        let out = troupe(
            dir.path(),
            &[
                "run",
                "probe.troupe",
                "-i",
                "topic=x",
                "--seed",
                &seed,
                "--json",
            ],
        );
        assert!(out.status.success(), "seed {seed}: {out:?}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["verified"], true, "seed {seed}: {doc}");
        (out.stdout, doc["results"].clone())
    };
    let mut branches = std::collections::BTreeSet::new();
    let (mut most_rounds, mut most_waited) = (0, 0);
    for seed in 0..24 {
        let (stdout, results) = run(seed);
        branches.insert(results["branch"].as_str().unwrap().to_owned());
        let rounds = results["rounds"].as_i64().unwrap();
        let waited = results["waited"].as_i64().unwrap();
        assert!(
            rounds <= MAX_ROUNDS && waited <= MAX_ROUNDS,
            "seed {seed}: {results}"
        );
        most_rounds = most_rounds.max(rounds);
        most_waited = most_waited.max(waited);
        if seed % 8 == 0 {
            assert_eq!(run(seed).0, stdout, "seed {seed} replays the same run");
        }
    }
    assert_eq!(branches.len(), 2, "both branches: {branches:?}");
    assert!(
        most_rounds >= 2,
        "a `while more` loop iterated: {most_rounds}"
    );
    assert!(
        most_waited >= 2,
        "a `while not stop` loop iterated: {most_waited}"
    );
}

/// The README's first command (`cargo run … -- run …`), as arguments of
/// the binary.
fn readme_main_command() -> Vec<String> {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("cargo run --release -p troupe-cli -- run "))
        .expect("the README's main command");
    let rest = line.split_once(" -- ").unwrap().1;
    // Words, with double-quoted parts joined (`case="A refund request"`).
    let mut words = Vec::new();
    let (mut word, mut quoted) = (String::new(), false);
    for c in rest.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    words.push(word);
    words
}

#[test]
fn the_readmes_main_command_runs_the_consensus_loop_several_rounds_with_the_mock() {
    let args = readme_main_command();
    assert!(
        args.iter().any(|a| a == "examples/consensus.troupe"),
        "{args:?}"
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = troupe(&workspace(), &args);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("mock model"),
        "says the mock is a mock: {stderr}"
    );
    let round: i64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("round = "))
        .expect("round in the result")
        .parse()
        .unwrap();
    // `round` starts at 1 and counts the loop's rounds.
    assert!(round >= 3, "at least two rounds: {stdout}");
    let reconsidered = stdout
        .lines()
        .filter(|l| l.contains("= reconsider(case"))
        .count();
    assert_eq!(reconsidered as i64, 2 * (round - 1), "{stdout}");
    assert!(stdout.contains("agreed = true"), "{stdout}");
}
