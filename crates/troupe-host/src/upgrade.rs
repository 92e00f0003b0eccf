//! `troupe upgrade`: moving unfinished runs to another version of their
//! workflow, only with proof.
//!
//! A run moves when its recorded execution, cut where it stands, is a
//! prefix of a run of the new version with the same statements, and every
//! recorded result is found there under its key
//! ([`troupe_msc::upgrade`]). Then the store moves it in one transaction
//! ([`troupe_store::Store::move_run`]) and its next drive replays the
//! recorded results under the new version: no model, tool or person is
//! asked again for them. Otherwise the run stays on its version, and the
//! refusal names the first recorded event the new version cannot explain
//! and what the new version has there. A refused run is safe: nothing of
//! it changed.

use crate::{Compiled, Host, HostError};
use serde::Serialize;
use std::collections::BTreeSet;
use troupe_msc::upgrade::{Upgrading, Version};
use troupe_runtime::StepKey;
use troupe_store::{NewVersion, RunStatus, Store};

/// What an upgrade did with one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Upgrade {
    /// `run-3`.
    pub run: String,
    #[serde(flatten)]
    pub outcome: Upgraded,
}

/// How an upgrade of one run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Upgraded {
    /// Moved to the new version, now its `version`.
    Moved {
        version: i64,
        events: usize,
        steps: usize,
    },
    /// `--dry-run`: it would move.
    WouldMove { events: usize, steps: usize },
    /// It runs this version already.
    Same,
    /// It stays on its version, for this reason.
    Refused { reason: String },
}

impl Host {
    /// Moves `run` to `to` if it may (see the module doc); with `dry_run`,
    /// only says whether it would.
    pub fn upgrade(&self, run: i64, to: &Compiled, dry_run: bool) -> Result<Upgrade, HostError> {
        let detail = self.store().run(run)?;
        let name = detail.summary.name.clone();
        let done = |outcome| {
            Ok(Upgrade {
                run: name.clone(),
                outcome,
            })
        };
        let refuse = |reason: String| done(Upgraded::Refused { reason });
        if detail.fingerprint == to.fingerprint && detail.summary.workflow == to.workflow().name {
            return done(Upgraded::Same);
        }
        match detail.summary.status {
            RunStatus::Done | RunStatus::Cancelled => {
                return refuse(format!(
                    "it is {}: only an unfinished run moves",
                    detail.summary.status
                ));
            }
            _ => {}
        }
        if let Some(owner) = &detail.summary.owner {
            return refuse(format!(
                "{} runs it now; pause it first (`troupe pause {name}`), upgrade it, then unpause it",
                troupe_store::describe_owner(owner)
            ));
        }
        if !self.store().parts(run)?.is_empty() {
            return refuse("it runs in parts on labelled workers, which cannot move yet".into());
        }
        if detail.pruned > 0 {
            return refuse(
                "its history before its checkpoint was pruned (--history-keep), and a move replays the whole history"
                    .into(),
            );
        }
        let old = self.recorded_from(&detail)?;
        let unprojected = |e: troupe_msc::upgrade::ProjectError| HostError::Recorded {
            run: name.clone(),
            message: e.to_string(),
        };
        let old_v = Version::new(&old.program, old.workflow()).map_err(unprojected)?;
        let new_v = Version::new(&to.program, to.workflow()).map_err(unprojected)?;
        // Recorded results, steps under way, and people's pending tasks
        // (a task is a step under way before its answer is a result).
        let mut steps: BTreeSet<String> = self
            .store()
            .steps(run)?
            .into_iter()
            .map(|s| s.key)
            .chain(
                self.store()
                    .run_tasks(run, true)?
                    .into_iter()
                    .map(|t| t.key),
            )
            .collect();
        steps.retain(|k| StepKey::parse_top_level(k).is_some());
        // The history streams through the check; only its moved form and
        // where each lifeline stands are kept.
        let mut check = match Upgrading::new(&old_v, &new_v, &steps) {
            Ok(c) => c,
            Err(refusal) => return refuse(refusal.to_string()),
        };
        let mut cut: Vec<(String, u64)> = old
            .workflow()
            .lifelines
            .iter()
            .map(|l| (l.name.clone(), 0))
            .collect();
        let mut refused = None;
        let checked = self.store().for_each_event(run, |l, e| {
            if refused.is_none() {
                if let Some(c) = cut.get_mut(l.0 as usize) {
                    c.1 += 1;
                }
                refused = check.event(l, e).err();
            }
        })?;
        if let Some(refusal) = refused {
            return refuse(refusal.to_string());
        }
        let moved = match check.finish() {
            Ok(m) => m,
            Err(refusal) => return refuse(refusal.to_string()),
        };
        if dry_run {
            return done(Upgraded::WouldMove {
                events: checked as usize,
                steps: moved.steps,
            });
        }
        // The move translates the history again as the store reads it,
        // a chunk at a time: the same events give the same answers.
        let mut again =
            Upgrading::new(&old_v, &new_v, &steps).map_err(|r| HostError::Recorded {
                run: name.clone(),
                message: r.to_string(),
            })?;
        let mut translate = |l, e: &troupe_msc::Event| again.event(l, e).map_err(|r| r.to_string());
        let version = self.store().move_run(
            run,
            &NewVersion {
                workflow: &to.workflow().name,
                file: Some(&to.file),
                source: &to.source,
                fingerprint: &to.fingerprint,
                canonical: &to.canonical,
                lifelines: to.workflow().lifelines.len(),
                checked,
                cut: &cut,
            },
            &mut translate,
        )?;
        self.forget_recorded(run);
        tracing::info!(run = %name, version, events = checked, "moved to another version");
        done(Upgraded::Moved {
            version,
            events: checked as usize,
            steps: moved.steps,
        })
    }

    /// [`Host::upgrade`] of every unfinished run of `workflow`, oldest
    /// first: each moves or stays on its version on its own.
    pub fn upgrade_workflow(
        &self,
        workflow: &str,
        to: &Compiled,
        dry_run: bool,
    ) -> Result<Vec<Upgrade>, HostError> {
        let mut runs: Vec<i64> = self
            .store()
            .runs(None)?
            .into_iter()
            .filter(|r| r.workflow == workflow && !r.status.is_final())
            .map(|r| r.id)
            .collect();
        runs.sort_unstable();
        let mut out = Vec::with_capacity(runs.len());
        for run in runs {
            out.push(match self.upgrade(run, to, dry_run) {
                Ok(u) => u,
                // One run's trouble (claimed meanwhile, say) is its own.
                Err(HostError::Store(e)) => Upgrade {
                    run: Store::run_name(run),
                    outcome: Upgraded::Refused {
                        reason: e.to_string(),
                    },
                },
                Err(e) => return Err(e),
            });
        }
        Ok(out)
    }
}

/// Where `run` moved to other versions, for its chart
/// ([`troupe_msc::execution_chart_moves`]): per move, the events each
/// lifeline of `workflow` (the run's current version) had then, and what
/// to write there. Empty for a run that never moved.
pub fn chart_moves(
    store: &Store,
    run: i64,
    workflow: &troupe_check::ir::Workflow,
) -> Result<Vec<(Vec<u64>, String)>, troupe_store::StoreError> {
    let versions = store.versions(run)?;
    Ok(versions
        .iter()
        .zip(versions.iter().skip(1))
        .map(|(past, next)| {
            let cut = workflow
                .lifelines
                .iter()
                .map(|l| {
                    past.cut
                        .iter()
                        .find(|(name, _)| *name == l.name)
                        .map_or(0, |(_, n)| *n)
                })
                .collect();
            let text = format!(
                "moved from version {} to version {} ({})",
                past.version,
                next.version,
                next.file.as_deref().unwrap_or("recorded source")
            );
            (cut, text)
        })
        .collect())
}
