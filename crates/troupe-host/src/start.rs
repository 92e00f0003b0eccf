//! Starting runs: a new run, the same unfinished run resumed, a run queued
//! for any worker, one started under an idempotency key, one forked from
//! another, and claiming a run for this process. Also the record a new run
//! is created from (its settings and, when its lifelines are placed, its
//! parts), shared with the scheduler's ticks.

use crate::{Compiled, Host, HostError, Notice, RunSettings, StartPolicy, Started};
use std::time::Duration;
use troupe_check::Value;
use troupe_store::{Claim, NewPart, NewRun, RunDetail, RunStatus, StepStatus, Store};

impl Host {
    /// Starts a run of `compiled` with `inputs`, or (by `policy`) claims the
    /// unfinished run with the same fingerprint and inputs. The caller then
    /// holds the lease and drives the run ([`Host::drive`]).
    pub fn start(
        &self,
        compiled: &Compiled,
        inputs: Vec<Value>,
        settings: &RunSettings,
        policy: StartPolicy,
    ) -> Result<Started, HostError> {
        let inputs_json = compiled.inputs_json(&inputs);
        let wf = compiled.workflow();
        let mut others = Vec::new();
        // The unfinished runs of the workflow, and the newest run of the
        // same workflow and inputs that is done: read by workflow and
        // status, not every run of the store.
        let (unfinished, done) = match policy {
            StartPolicy::ResumeSame => self.store.continuable(
                &wf.name,
                &compiled.file,
                &compiled.fingerprint,
                &inputs_json.to_string(),
            )?,
            _ => (Vec::new(), None),
        };
        for r in unfinished {
            let detail = self.store.run(r.id)?;
            let same = detail.fingerprint == compiled.fingerprint && detail.inputs == inputs_json;
            if !same {
                others.push(format!(
                    "{} ({}, {})",
                    r.name,
                    r.status,
                    if detail.fingerprint != compiled.fingerprint {
                        "another version of the workflow"
                    } else {
                        "other inputs"
                    }
                ));
                continue;
            }
            match r.status {
                RunStatus::NeedsResolution => {
                    return Err(needs_resolution(&detail));
                }
                _ => match self
                    .store
                    .claim(r.id, &self.config.owner, self.config.lease)?
                {
                    Claim::Claimed => {
                        return Ok(Started {
                            run: r.id,
                            name: r.name,
                            resumed: true,
                            finished: false,
                        });
                    }
                    Claim::Owned {
                        owner,
                        expires_in_ms,
                    } => {
                        return Err(HostError::Owned {
                            run: r.name,
                            owner,
                            expires_in_ms,
                        });
                    }
                    Claim::Unclaimable(RunStatus::NeedsResolution) => {
                        return Err(needs_resolution(&self.store.run(r.id)?));
                    }
                    // It ended meanwhile, or it runs in parts: start
                    // a new one.
                    Claim::Unclaimable(_) | Claim::Placed => {}
                },
            }
        }
        if let Some(r) = done {
            return Ok(Started {
                run: r.id,
                name: r.name,
                resumed: false,
                finished: true,
            });
        }
        // A new run needs an implementation of every extern and models it
        // can reach (a resumed one is checked with its recorded settings
        // when it is driven): refused before it is recorded.
        let unbound = self.backends.unbound_externs(compiled)?;
        if !unbound.is_empty() && !settings.mock_externs {
            return Err(HostError::UnboundExterns { names: unbound });
        }
        self.backends.check_models(settings)?;
        let run = self.create(
            compiled,
            inputs,
            settings,
            Some((self.config.owner.clone(), self.config.lease)),
        )?;
        let name = Store::run_name(run);
        if !others.is_empty() {
            self.notify(Notice::NewBeside {
                run: name.clone(),
                others,
            });
        }
        Ok(Started {
            run,
            name,
            resumed: false,
            finished: false,
        })
    }

    /// Records a new run queued for any worker to claim (`troupe run
    /// --detach` on a shared store): nothing runs in this process.
    pub fn enqueue(
        &self,
        compiled: &Compiled,
        inputs: Vec<Value>,
        settings: &RunSettings,
    ) -> Result<Started, HostError> {
        let unbound = self.backends.unbound_externs(compiled)?;
        if !unbound.is_empty() && !settings.mock_externs {
            return Err(HostError::UnboundExterns { names: unbound });
        }
        self.backends.check_models(settings)?;
        let run = self.create(compiled, inputs, settings, None)?;
        Ok(Started {
            run,
            name: Store::run_name(run),
            resumed: false,
            finished: false,
        })
    }

    /// Starts a new run of `compiled` on a client's behalf under its
    /// idempotency key `key`, claimed by this host, unless the key started
    /// a run already: then that run, neither created nor claimed
    /// ([`troupe_store::Keyed`]). A key names one call: a key that started a
    /// run of another workflow is refused.
    pub fn start_keyed(
        &self,
        compiled: &Compiled,
        inputs: Vec<Value>,
        settings: &RunSettings,
        key: &str,
    ) -> Result<troupe_store::Keyed, HostError> {
        let existing = |run: i64| -> Result<troupe_store::Keyed, HostError> {
            let detail = self.store.run(run)?;
            if detail.summary.workflow != compiled.workflow().name {
                return Err(HostError::Input(format!(
                    "the idempotency key {key:?} started {} of workflow `{}`; a key names one call, so give this call a key of its own",
                    detail.summary.name, detail.summary.workflow
                )));
            }
            Ok(troupe_store::Keyed::Existing(run))
        };
        if let Some(run) = self.store.run_for_key(key)? {
            return existing(run);
        }
        let unbound = self.backends.unbound_externs(compiled)?;
        if !unbound.is_empty() && !settings.mock_externs {
            return Err(HostError::UnboundExterns { names: unbound });
        }
        self.backends.check_models(settings)?;
        let new = new_run(
            compiled,
            inputs,
            settings,
            Some((self.config.owner.clone(), self.config.lease)),
        )?;
        match self.store.create_run_keyed(&new, key)? {
            troupe_store::Keyed::Existing(run) => existing(run),
            created => Ok(created),
        }
    }

    /// Records a new run, claimed by `owner` or queued.
    fn create(
        &self,
        compiled: &Compiled,
        inputs: Vec<Value>,
        settings: &RunSettings,
        owner: Option<(String, Duration)>,
    ) -> Result<i64, HostError> {
        Ok(self
            .store
            .create_run(&new_run(compiled, inputs, settings, owner)?)?)
    }

    /// Starts a run forked from `from` (see `troupe_store::ForkAt`): the
    /// same recorded workflow and settings, its inputs with `inputs`
    /// overriding the recorded ones, taking the recorded results of the
    /// steps before `at`. The caller then holds its lease and drives it
    /// ([`Host::drive`]): those steps are replayed, the rest run live.
    pub fn fork(
        &self,
        from: i64,
        at: &troupe_store::ForkAt,
        inputs: &[(String, String)],
    ) -> Result<(Started, troupe_store::Forked), HostError> {
        let detail = self.store.run(from)?;
        if !self.store.parts(from)?.is_empty() {
            return Err(HostError::Placement(format!(
                "{} runs in parts on labelled workers, which cannot be forked yet",
                detail.summary.name
            )));
        }
        let compiled = self.recorded(from)?;
        let values = compiled.parse_inputs(inputs, Some(&detail.inputs))?;
        let settings = recorded_settings(&detail);
        let new = new_run(
            &compiled,
            values,
            &settings,
            Some((self.config.owner.clone(), self.config.lease)),
        )?;
        let forked = self.store.fork_run(&new, from, at)?;
        Ok((
            Started {
                run: forked.run,
                name: Store::run_name(forked.run),
                resumed: false,
                finished: false,
            },
            forked,
        ))
    }

    /// Claims `run` for this process: fails with who owns it, or why it
    /// cannot go on.
    pub fn claim(&self, run: i64) -> Result<(), HostError> {
        if let Some(parent) = &self.config.adopt
            && self
                .store
                .hand_over(run, parent, &self.config.owner, self.config.lease)?
        {
            return Ok(());
        }
        match self
            .store
            .claim(run, &self.config.owner, self.config.lease)?
        {
            Claim::Claimed => Ok(()),
            Claim::Owned {
                owner,
                expires_in_ms,
            } => Err(HostError::Owned {
                run: Store::run_name(run),
                owner,
                expires_in_ms,
            }),
            Claim::Unclaimable(RunStatus::NeedsResolution) => {
                Err(needs_resolution(&self.store.run(run)?))
            }
            Claim::Placed => Err(HostError::Placed {
                run: Store::run_name(run),
            }),
            Claim::Unclaimable(status) => Err(HostError::WrongState {
                run: Store::run_name(run),
                status,
                hint: match status {
                    RunStatus::Failed => "it can be retried from its last durable step".to_owned(),
                    RunStatus::Paused => format!(
                        "it is paused; `troupe unpause {}` lets it go on",
                        Store::run_name(run)
                    ),
                    _ => "nothing to resume".into(),
                },
            }),
        }
    }
}

/// The settings a run was recorded with (a run recorded before settings
/// were, its model and seed).
pub(crate) fn recorded_settings(detail: &troupe_store::RunDetail) -> RunSettings {
    serde_json::from_value(detail.settings.clone()).unwrap_or_else(|_| RunSettings {
        llm: detail.llm.clone().filter(|l| l != "default"),
        seed: detail.seed,
        ..RunSettings::default()
    })
}

/// The record of a new run of `compiled`, claimed by `owner` or queued.
pub(crate) fn new_run(
    compiled: &Compiled,
    inputs: Vec<Value>,
    settings: &RunSettings,
    owner: Option<(String, Duration)>,
) -> Result<NewRun, HostError> {
    let settings_json = serde_json::to_string(settings)
        .map_err(|e| HostError::Config(format!("cannot record the run's settings: {e}")))?;
    let wf = compiled.workflow();
    let parts = parts_of(compiled, &settings.placement)?;
    if !parts.is_empty() && owner.is_some() {
        return Err(HostError::Placement(
            "a run with placed lifelines runs in parts on labelled workers, not in this process: queue it with `--detach` on a store the workers share".into(),
        ));
    }
    Ok(NewRun {
        workflow: wf.name.clone(),
        file: Some(compiled.file.clone()),
        source: compiled.source.clone(),
        fingerprint: compiled.fingerprint.clone(),
        canonical: compiled.canonical.clone(),
        inputs_json: compiled.inputs_json(&inputs).to_string(),
        inputs,
        seed: settings.seed,
        lifelines: wf.lifelines.len(),
        llm: settings.llm_label(),
        settings: settings_json,
        owner,
        parts,
    })
}

/// The parts of a run placed by `placement` (lifeline → label): one per
/// label, in the order of their first lifelines, the unpinned lifelines
/// together in a part any worker may claim. None without a placement.
fn parts_of(
    compiled: &Compiled,
    placement: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<NewPart>, HostError> {
    if placement.is_empty() {
        return Ok(Vec::new());
    }
    let wf = compiled.workflow();
    let names: Vec<&str> = wf.lifelines.iter().map(|l| l.name.as_str()).collect();
    for (lifeline, label) in placement {
        if !names.contains(&lifeline.as_str()) {
            return Err(HostError::Placement(format!(
                "`{lifeline}` is not a lifeline of workflow `{}`; pin one of its lifelines: {}",
                wf.name,
                names.join(", ")
            )));
        }
        if !valid_label(label) {
            return Err(HostError::Placement(format!(
                "`{lifeline}` is pinned to {label:?}: a label is one word of letters, digits, `-`, `_`, `.` or `:` (as `troupe worker --labels` takes them)"
            )));
        }
    }
    let mut parts: Vec<NewPart> = Vec::new();
    for name in names {
        let label = placement.get(name).cloned().unwrap_or_default();
        match parts.iter_mut().find(|p| p.label == label) {
            Some(p) => p.lifelines.push(name.to_owned()),
            None => parts.push(NewPart {
                label,
                lifelines: vec![name.to_owned()],
            }),
        }
    }
    Ok(parts)
}

/// Whether `label` is a worker label: one non-empty word.
pub fn valid_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 64
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

pub(crate) fn needs_resolution(detail: &RunDetail) -> HostError {
    // The step the run stopped at is named in its recorded error; other
    // steps may be started too (idempotent effects in flight when it
    // stopped), and they need no person.
    let error = detail.summary.error.as_deref().unwrap_or_default();
    let started = || {
        detail
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Started)
    };
    let step = started()
        .find(|s| error.contains(&format!("the effect {} started", s.key)))
        .or_else(|| started().next())
        .map_or_else(|| "?".to_owned(), |s| s.key.clone());
    HostError::NeedsResolution {
        run: detail.summary.name.clone(),
        step,
        message: detail.summary.error.clone().unwrap_or_default(),
    }
}
