//! Loading a workflow once: parse, check, contract verification and the
//! fingerprint together, yielding one compiled workflow that every run of
//! it shares.

use crate::HostError;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_check::Value;
use troupe_check::ir::{Program, Workflow};
use troupe_contracts::VerifyOptions;
use troupe_store::RunDetail;
use troupe_syntax::Diagnostic;

/// A workflow that checks and keeps the contracts of the tools it calls.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The file as the user named it (or `(recorded source)`).
    pub file: String,
    pub source: String,
    pub program: Arc<Program>,
    workflow: usize,
    /// The fingerprint of the workflow's structure and its canonical form.
    pub fingerprint: String,
    pub canonical: String,
    /// Contract findings that are not errors (warnings, notes).
    pub warnings: Vec<Diagnostic>,
}

impl Compiled {
    /// Reads, checks and verifies `path`; `workflow` chooses one of
    /// several.
    pub fn load(path: &Path, workflow: Option<&str>) -> Result<Compiled, HostError> {
        Compiled::load_with(path, workflow, &VerifyOptions::default())
    }

    /// [`Compiled::load`] with contract verification options
    /// (`deny_unverified`: a called tool without a contract is an error).
    pub fn load_with(
        path: &Path,
        workflow: Option<&str>,
        options: &VerifyOptions,
    ) -> Result<Compiled, HostError> {
        // The file and the files it imports, as one bundle text (what a
        // durable run records, so a resumed run checks the same files).
        let loaded = troupe_check::load_file(path).map_err(|source| HostError::Read {
            path: path.to_owned(),
            source,
        })?;
        let source = loaded.text;
        let base = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_owned);
        Compiled::from_source_with(
            source,
            &path.display().to_string(),
            &base,
            workflow,
            options,
        )
    }

    /// Checks and verifies a source text; `base` is the directory contract
    /// sidecars are found relative to.
    pub fn from_source(
        source: String,
        file: &str,
        base: &Path,
        workflow: Option<&str>,
    ) -> Result<Compiled, HostError> {
        Compiled::from_source_with(source, file, base, workflow, &VerifyOptions::default())
    }

    /// [`Compiled::from_source`] with contract verification options.
    pub fn from_source_with(
        source: String,
        file: &str,
        base: &Path,
        workflow: Option<&str>,
        options: &VerifyOptions,
    ) -> Result<Compiled, HostError> {
        let (program, diagnostics) = troupe_check::check_text(&source);
        let Some(program) = program else {
            return Err(HostError::DoesNotCheck {
                file: file.to_owned(),
                source_text: source,
                diagnostics,
            });
        };
        let findings =
            troupe_contracts::verify_workflows_with(&program, Some(&source), base, options);
        let (errors, warnings): (Vec<_>, Vec<_>) =
            findings.into_iter().partition(Diagnostic::is_error);
        if !errors.is_empty() {
            return Err(HostError::Contracts {
                file: file.to_owned(),
                source_text: source,
                diagnostics: errors,
            });
        }
        let mut compiled = Compiled::unverified(source, file, program, workflow)?;
        compiled.warnings = warnings;
        Ok(compiled)
    }

    /// A recorded run's workflow, from the source recorded with it. Its
    /// contracts were verified when the run started; they are not again
    /// (the sidecar files may have moved since).
    pub fn recorded(detail: &RunDetail) -> Result<Compiled, HostError> {
        Compiled::recorded_source(
            &detail.summary.name,
            detail.source.clone(),
            detail.summary.file.as_deref(),
            &detail.summary.workflow,
        )
    }

    /// [`Compiled::recorded`] of the source a run recorded for one of its
    /// versions (`run` names it in errors).
    pub fn recorded_source(
        run: &str,
        source: String,
        file: Option<&str>,
        workflow: &str,
    ) -> Result<Compiled, HostError> {
        let (program, diagnostics) = troupe_check::check_text(&source);
        let Some(program) = program else {
            return Err(HostError::Recorded {
                run: run.to_owned(),
                message: format!("{} diagnostic(s)", diagnostics.len()),
            });
        };
        let file = file.unwrap_or("(recorded source)");
        Compiled::unverified(source, file, program, Some(workflow))
    }

    fn unverified(
        source: String,
        file: &str,
        program: Program,
        workflow: Option<&str>,
    ) -> Result<Compiled, HostError> {
        let names =
            || -> Vec<String> { program.workflows.iter().map(|w| w.name.clone()).collect() };
        let own: Vec<usize> = program.own_workflows().map(|(i, _)| i).collect();
        let index = match workflow {
            Some(name) => program
                .workflows
                .iter()
                .position(|w| w.name == name)
                .ok_or_else(|| HostError::NoSuchWorkflow {
                    file: file.to_owned(),
                    name: name.to_owned(),
                    available: names(),
                })?,
            None if own.len() == 1 => own[0],
            None if own.is_empty() => {
                return Err(HostError::NoWorkflow {
                    file: file.to_owned(),
                });
            }
            None => {
                return Err(HostError::WhichWorkflow {
                    file: file.to_owned(),
                    available: names(),
                });
            }
        };
        let (fingerprint, canonical) =
            troupe_store::fingerprint(&program, &program.workflows[index]);
        Ok(Compiled {
            file: file.to_owned(),
            source,
            program: Arc::new(program),
            workflow: index,
            fingerprint,
            canonical,
            warnings: Vec::new(),
        })
    }

    pub fn workflow(&self) -> &Workflow {
        &self.program.workflows[self.workflow]
    }

    pub fn types(&self) -> &troupe_check::TypeTable {
        &self.program.types
    }

    /// Parses inputs given as `name=value` texts and/or a JSON object.
    pub fn parse_inputs(
        &self,
        pairs: &[(String, String)],
        json: Option<&serde_json::Value>,
    ) -> Result<Vec<Value>, HostError> {
        troupe_runtime::parse_inputs(self.workflow(), self.types(), pairs, json)
            .map_err(|e| HostError::Input(e.to_string()))
    }

    /// The inputs as a JSON object keyed by input name.
    pub fn inputs_json(&self, inputs: &[Value]) -> serde_json::Value {
        let wf = self.workflow();
        serde_json::Value::Object(
            wf.inputs
                .iter()
                .zip(inputs)
                .map(|(v, value)| (wf.var(*v).name.clone(), value.to_json(self.types())))
                .collect(),
        )
    }
}
