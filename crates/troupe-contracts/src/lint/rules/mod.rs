//! The lint rules, one per file; [`ALL`] lists them in the order they run.
//!
//! | rule | principle | checks |
//! | --- | --- | --- |
//! | `tool-description` | completeness | the tool says what it does |
//! | `argument-description` | completeness | every argument says what it means |
//! | `argument-domain` | completeness | string arguments whose name implies a domain declare it |
//! | `output-schema` | completeness | the results are described |
//! | `missing-annotations` | boundaries | the tool has behaviour annotations |
//! | `write-hint` | boundaries | tools named like writers say whether they are read-only |
//! | `unconfirmed-destructive` | boundaries | destructive tools have a confirmation contract |
//! | `invalid-contract` | failures | the MCP+ contract decodes |
//! | `failure-modes` | failures | the named errors are documented |
//! | `undeclared-relation` | relations | consumed ids/results have a declared producer relation |
//! | `dangling-relation` | relations | relations name existing tools and fields |
//! | `schema-validity` | completeness | schemas are valid object schemas; names are unique |
//! | `contract-schema` | completeness | contract and schemas describe the same arguments |
//! | `model-instruction` | safety | descriptions do not instruct the model |
//! | `shell-command` | safety | no shell or SQL command lines planted in texts or values |
//! | `data-exfiltration` | safety | texts do not order the model to hand over the user's data |
//! | `tool-preference` | safety | a tool does not rank itself against other tools |
//! | `hidden-unicode` | safety | no invisible, reordering or look-alike characters |
//! | `tool-shadowing` | safety | no tool named or described like another server's |
//! | `hint-consistency` | safety | annotations, contract and name agree |
//! | `tool-drift` | safety | definitions are unchanged since they were locked |

pub mod argument_description;
pub mod argument_domain;
pub mod contract_schema;
pub mod dangling_relation;
pub mod data_exfiltration;
pub mod failure_modes;
pub mod hidden_unicode;
pub mod hint_consistency;
pub mod invalid_contract;
pub mod missing_annotations;
pub mod model_instruction;
pub mod output_schema;
pub mod schema_validity;
pub mod shell_command;
pub mod tool_description;
pub mod tool_drift;
pub mod tool_preference;
pub mod tool_shadowing;
pub mod unconfirmed_destructive;
pub mod undeclared_relation;
pub mod write_hint;

use super::Rule;

/// Every rule, in the order they run.
pub const ALL: [Rule; 21] = [
    tool_description::RULE,
    argument_description::RULE,
    argument_domain::RULE,
    output_schema::RULE,
    missing_annotations::RULE,
    write_hint::RULE,
    unconfirmed_destructive::RULE,
    invalid_contract::RULE,
    failure_modes::RULE,
    undeclared_relation::RULE,
    dangling_relation::RULE,
    schema_validity::RULE,
    contract_schema::RULE,
    model_instruction::RULE,
    shell_command::RULE,
    data_exfiltration::RULE,
    tool_preference::RULE,
    hidden_unicode::RULE,
    tool_shadowing::RULE,
    hint_consistency::RULE,
    tool_drift::RULE,
];

#[cfg(test)]
mod tests {
    #[test]
    fn rule_ids_are_unique_and_dashed() {
        let ids: Vec<&str> = super::ALL.iter().map(|rule| rule.id).collect();
        for (i, id) in ids.iter().enumerate() {
            assert!(!ids[i + 1..].contains(id), "{id} twice");
            assert!(
                id.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{id}"
            );
        }
    }
}
