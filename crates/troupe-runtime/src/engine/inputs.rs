//! A run's inputs: read from `name=value` texts and JSON by their declared
//! types, and bound at their lifelines when a run starts. Reading needs no
//! engine, so callers check inputs before they record a run.

use super::*;

impl Engine {
    /// Reads inputs given as `name=value` texts (parsed by declared type)
    /// and/or a JSON object; every declared input must be given exactly once.
    pub fn parse_inputs(
        &self,
        pairs: &[(String, String)],
        json: Option<&serde_json::Value>,
    ) -> Result<Vec<Value>, RunError> {
        parse_inputs(self.workflow(), self.types(), pairs, json)
    }
}

impl RunState {
    pub(super) fn bind_inputs(&mut self, inputs: Vec<Value>) -> Result<(), RunError> {
        let engine = self.engine.clone();
        let wf = &engine.program.workflows[engine.workflow];
        if inputs.len() != wf.inputs.len() {
            return Err(RunError::Input {
                name: "inputs".into(),
                message: format!(
                    "expected {} input(s), got {}",
                    wf.inputs.len(),
                    inputs.len()
                ),
            });
        }
        for (var, value) in wf.inputs.iter().zip(inputs) {
            let v = wf.var(*var);
            if !value.conforms(&v.ty, &engine.program.types) {
                return Err(RunError::Input {
                    name: v.name.clone(),
                    message: format!("expected {}", engine.program.types.display(&v.ty)),
                });
            }
            self.lanes[v.lifeline.0 as usize].env.set(*var, value);
        }
        Ok(())
    }
}

/// Reads the inputs of `wf` given as `name=value` texts (parsed by declared
/// type) and/or a JSON object; every declared input must be given exactly
/// once. Needs no engine: callers parse inputs before they record a run.
pub fn parse_inputs(
    wf: &Workflow,
    types: &TypeTable,
    pairs: &[(String, String)],
    json: Option<&serde_json::Value>,
) -> Result<Vec<Value>, RunError> {
    let mut values: Vec<Option<Value>> = vec![None; wf.inputs.len()];
    let index = |name: &str| wf.inputs.iter().position(|v| wf.var(*v).name == name);
    let unknown = |name: &str| {
        let names: Vec<_> = wf.inputs.iter().map(|v| wf.var(*v).name.as_str()).collect();
        RunError::Input {
            name: name.to_owned(),
            message: format!("no such input; the inputs are {}", names.join(", ")),
        }
    };
    if let Some(json) = json {
        let obj = json.as_object().ok_or_else(|| RunError::Input {
            name: "--input-json".into(),
            message: "expected a JSON object".into(),
        })?;
        for (name, v) in obj {
            let i = index(name).ok_or_else(|| unknown(name))?;
            let ty = &wf.var(wf.inputs[i]).ty;
            values[i] = Some(Value::from_json(v, ty, types).map_err(|m| RunError::Input {
                name: name.clone(),
                message: m,
            })?);
        }
    }
    for (name, text) in pairs {
        let i = index(name).ok_or_else(|| unknown(name))?;
        let ty = &wf.var(wf.inputs[i]).ty;
        values[i] = Some(Value::parse(text, ty, types).map_err(|m| RunError::Input {
            name: name.clone(),
            message: m,
        })?);
    }
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            v.ok_or_else(|| {
                let var = wf.var(wf.inputs[i]);
                RunError::Input {
                    name: var.name.clone(),
                    message: format!(
                        "missing; give it with --input {}=… ({})",
                        var.name,
                        types.display(&var.ty)
                    ),
                }
            })
        })
        .collect()
}
