//! `troupe bench upgrade`: what moving a run to a new version costs, on
//! the path users run (`troupe upgrade`, a child process of this binary),
//! against verifying the same run (`troupe verify`, which reads the same
//! history through the same monitor) measured in the same run.

use super::durable::WAITING_COUNTER;
use super::{ExitStatus, measure_child, waits_for_a_person};
use anyhow::Result;
use std::ffi::OsStr;

pub(super) fn bench_upgrade(rounds: i64, dir: Option<&std::path::Path>) -> Result<ExitStatus> {
    use troupe_store::{Durability, Store};
    let dir = dir.map_or_else(
        || std::env::temp_dir().join(format!("troupe-bench-upgrade-{}", std::process::id())),
        |d| d.to_owned(),
    );
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("counted.troupe"), WAITING_COUNTER)?;
    // The new version: a step after the person's answer, which the run
    // has not reached.
    std::fs::write(
        dir.join("counted2.troupe"),
        WAITING_COUNTER.replace(
            "  act Ping: ok = go_on(k)\n",
            "  act Ping: ok = go_on(k)\n  act Ping: seen = k + 1\n",
        ),
    )?;
    let db = dir.join("upgrade.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    crate::outln!(
        "troupe bench upgrade: {rounds} rounds, then a wait for a person; the run moves to a version with a step after the wait; files in {}",
        dir.display()
    );
    let limit = format!("limit={rounds}");
    let arg = OsStr::new;
    let first = measure_child(
        &[
            arg("run"),
            arg("counted.troupe"),
            arg("--store"),
            db.as_os_str(),
            arg("-i"),
            arg(&limit),
        ],
        &dir,
        waits_for_a_person(&db),
    )?;
    anyhow::ensure!(
        first.status.is_none(),
        "the run ended before it waited: {}",
        first.stderr
    );
    let events = Store::open(&db, Durability::Normal)?.run(1)?.events;
    let step = |label: &str, args: &[&OsStr]| -> Result<std::time::Duration> {
        let mut all = vec![arg("--store"), db.as_os_str()];
        all.splice(0..0, args.iter().copied());
        let c = measure_child(&all, &dir, || false)?;
        anyhow::ensure!(
            c.status.is_some_and(|s| s.success()),
            "{label} failed: {}",
            c.stderr
        );
        crate::outln!(
            "  {label:<44} {:>8.2?}  {:>7.2} µs/event  peak {:>7} KiB",
            c.elapsed,
            c.elapsed.as_secs_f64() * 1e6 / events.max(1) as f64,
            c.peak_kib
        );
        Ok(c.elapsed)
    };
    let verify = step(
        "troupe verify (the baseline)",
        &[arg("verify"), arg("run-1")],
    )?;
    let dry = step(
        "troupe upgrade --dry-run (the check)",
        &[
            arg("upgrade"),
            arg("run-1"),
            arg("--to"),
            arg("counted2.troupe"),
            arg("--dry-run"),
        ],
    )?;
    let moved = step(
        "troupe upgrade (check and move)",
        &[
            arg("upgrade"),
            arg("run-1"),
            arg("--to"),
            arg("counted2.troupe"),
        ],
    )?;
    step(
        "troupe answer",
        &[arg("answer"), arg("task-1"), arg("--yes")],
    )?;
    step(
        "troupe resume (replays the history under v2)",
        &[arg("resume"), arg("run-1")],
    )?;
    crate::outln!(
        "  {events} events: the check costs {:.2}x a verification of the same history, the move {:.2}x",
        dry.as_secs_f64() / verify.as_secs_f64(),
        moved.as_secs_f64() / verify.as_secs_f64()
    );
    Ok(ExitStatus::Success)
}
