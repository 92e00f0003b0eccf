//! One contract per tool, from every source that speaks of it.
//!
//! **What**: a tool's contract can come from three places: the workflow's
//! `contracts:` sidecar (reviewed by the workflow's author), the MCP+
//! contract the server publishes in the tool's `_meta`, and the tool's MCP
//! annotations (`readOnlyHint`, `destructiveHint`). [`resolve`] merges them
//! so that **the strictest wins**: the tool is transactional if any source
//! says it changes the world (a contract's `transactional`, or an explicit
//! `destructiveHint: true` on a tool not marked read-only); it needs a
//! confirmation if any contract says so; its relations (`requires`,
//! `precedes`, …) and failure modes are the union of the contracts'; a
//! confirmation shows every argument any source asks for. Each way the
//! sources disagree is reported ([`Resolved::disagreements`]): W0606 when a
//! run starts, so the author sees which source to fix.
//!
//! **Why**: a server's `_meta` is the normal way a third-party server
//! publishes contracts, and it can lie. Taking any one source whole (the
//! sidecar when there is one, else `_meta`, else annotations) let a lying
//! `_meta` (`transactional: false`) override the server's own
//! `destructiveHint: true`, and left `_meta`'s `requires` unenforced. No
//! source can make a tool laxer than another source says it is.
//!
//! **Example**: a sidecar saying `book_ticket` requires `check_balance`, and
//! a `_meta` saying `book_ticket` is not transactional with no relations,
//! with `destructiveHint: true`: the resolved contract is transactional and
//! requires `check_balance`, with two disagreements.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::contract::ToolContract;
use crate::mcp::McpTool;

/// What a server publishes of one tool, as far as contracts go.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Published {
    /// The MCP+ contract in `_meta`: `None` without one, `Err` (why) when
    /// it is there but cannot be read.
    pub contract: Option<Result<ToolContract, String>>,
    /// `readOnlyHint` as sent (absent: `None`).
    pub read_only: Option<bool>,
    /// `destructiveHint` as sent (absent: `None`).
    pub destructive: Option<bool>,
}

impl Published {
    /// The contract facts of a listed tool.
    pub fn of(tool: &McpTool) -> Published {
        let annotations = tool.annotations.as_ref();
        Published {
            contract: tool.contract().map_err(|e| e.to_string()).transpose(),
            read_only: annotations.and_then(|a| a.read_only_hint),
            destructive: annotations.and_then(|a| a.destructive_hint),
        }
    }

    /// Whether the annotations explicitly say a call changes the world
    /// irreversibly (an explicit `destructiveHint: true`, not read-only).
    /// MCP's defaults are not taken as a statement: a server that says
    /// nothing says nothing.
    fn says_destructive(&self) -> bool {
        self.destructive == Some(true) && self.read_only != Some(true)
    }
}

/// What the servers of a run publish: server name → tool name → facts.
pub type PublishedTools = BTreeMap<String, BTreeMap<String, Published>>;

/// Reads a server's `tools/list` entries (as JSON) into [`Published`]
/// facts by tool name; entries that are not tools are skipped.
pub fn published_of(tools: &[Value]) -> BTreeMap<String, Published> {
    tools
        .iter()
        .filter_map(|t| serde_json::from_value::<McpTool>(t.clone()).ok())
        .map(|t| (t.name.clone(), Published::of(&t)))
        .collect()
}

/// One tool's contract after every source has been heard.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resolved {
    /// The merged contract (`None`: no source has one).
    pub contract: Option<ToolContract>,
    /// How the sources disagree, one sentence each (empty: they agree).
    pub disagreements: Vec<String>,
}

/// Merges the sidecar's contract of a tool with what its server publishes;
/// the strictest wins (see the module documentation).
pub fn resolve(sidecar: Option<&ToolContract>, published: Option<&Published>) -> Resolved {
    let mut disagreements = Vec::new();
    let meta = match published.and_then(|p| p.contract.as_ref()) {
        Some(Ok(c)) => Some(c),
        Some(Err(why)) => {
            disagreements.push(format!(
                "its `_meta` contract cannot be read ({why}), so only the other sources count"
            ));
            None
        }
        None => None,
    };
    let sources: Vec<(&str, &ToolContract)> = [("the sidecar", sidecar), ("`_meta`", meta)]
        .into_iter()
        .filter_map(|(name, c)| c.map(|c| (name, c)))
        .collect();
    let Some(&(_, base)) = sources.first() else {
        return Resolved {
            contract: None,
            disagreements,
        };
    };
    let mut merged = base.clone();
    for &(_, other) in &sources[1..] {
        merged.transactional |= other.transactional;
        merged.requires_confirmation |= other.requires_confirmation;
        merged.confirmation_shows = match (&merged.confirmation_shows, &other.confirmation_shows) {
            // `None` is every argument: the most a confirmation can show.
            (None, _) | (_, None) => None,
            (Some(a), Some(b)) => {
                let mut all = a.clone();
                all.extend(b.iter().filter(|n| !a.contains(n)).cloned());
                Some(all)
            }
        };
        for mode in &other.failure_modes {
            if merged.failure_mode(&mode.name).is_none() {
                merged.failure_modes.push(mode.clone());
            }
        }
        for relation in &other.relations {
            if !merged.relations.contains(relation) {
                merged.relations.push(relation.clone());
            }
        }
    }
    if let [(a, x), (b, y)] = sources.as_slice() {
        let flag = |name: &str, p: bool, q: bool| {
            (p != q).then(|| {
                let (yes, no) = if p { (a, b) } else { (b, a) };
                format!("{yes} says it is {name} and {no} says it is not")
            })
        };
        disagreements.extend(flag("transactional", x.transactional, y.transactional));
        disagreements.extend(flag(
            "to be confirmed",
            x.requires_confirmation,
            y.requires_confirmation,
        ));
        for (p, q, name) in [(x, y, b), (y, x, a)] {
            for r in p.relations.iter().filter(|r| !q.relations.contains(r)) {
                disagreements.push(format!(
                    "{name} lacks the relation `{}` `{}` the other source states",
                    serde_json::to_value(r.kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    r.tool
                ));
            }
        }
    }
    if let Some(p) = published {
        if p.says_destructive() && !merged.transactional {
            disagreements.push(
                "its annotations say it is destructive (`destructiveHint: true`) and its \
                 contract says it is not transactional"
                    .to_owned(),
            );
            merged.transactional = true;
        }
        if p.read_only == Some(true) && merged.transactional {
            disagreements.push(
                "its annotations say it is read-only (`readOnlyHint: true`) and its contract \
                 says it is transactional"
                    .to_owned(),
            );
        }
    }
    Resolved {
        contract: Some(merged),
        disagreements,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Relation, RelationKind};

    fn contract(transactional: bool, relations: &[(&str, RelationKind)]) -> ToolContract {
        let mut c: ToolContract = serde_json::from_value(serde_json::json!({
            "transactional": transactional, "requires_confirmation": false
        }))
        .unwrap();
        c.relations = relations
            .iter()
            .map(|(tool, kind)| Relation {
                kind: *kind,
                tool: (*tool).to_owned(),
                bindings: Vec::new(),
                guard: Vec::new(),
            })
            .collect();
        c
    }

    fn published(
        c: Option<ToolContract>,
        read_only: Option<bool>,
        destructive: Option<bool>,
    ) -> Published {
        Published {
            contract: c.map(Ok),
            read_only,
            destructive,
        }
    }

    #[test]
    fn the_strictest_source_wins_and_each_disagreement_is_named() {
        let sidecar = contract(true, &[("check_balance", RelationKind::Requires)]);
        let lying = published(Some(contract(false, &[])), None, Some(true));
        let r = resolve(Some(&sidecar), Some(&lying));
        let c = r.contract.unwrap();
        assert!(c.transactional);
        assert_eq!(c.relations.len(), 1);
        assert_eq!(r.disagreements.len(), 2, "{:?}", r.disagreements);
        assert!(r.disagreements[0].contains("the sidecar says it is transactional"));
        assert!(
            r.disagreements[1].contains("`_meta` lacks the relation `requires` `check_balance`")
        );

        // `_meta` alone, lying against the annotations: the annotations win.
        let r = resolve(None, Some(&lying));
        assert!(r.contract.unwrap().transactional);
        assert!(r.disagreements[0].contains("destructiveHint"));

        // Relations are the union; agreeing sources say nothing.
        let a = contract(false, &[("get_user", RelationKind::Requires)]);
        let b = contract(false, &[("quote_fare", RelationKind::Precedes)]);
        let r = resolve(Some(&a), Some(&published(Some(b), Some(true), None)));
        assert_eq!(r.contract.unwrap().relations.len(), 2);
        assert_eq!(r.disagreements.len(), 2);
        let r = resolve(
            Some(&a),
            Some(&published(Some(a.clone()), Some(true), None)),
        );
        assert!(r.disagreements.is_empty(), "{:?}", r.disagreements);
    }

    #[test]
    fn silence_is_not_a_statement_and_unreadable_contracts_are_named() {
        // No contract anywhere: none, whatever MCP's defaults would say.
        assert_eq!(
            resolve(None, Some(&Published::default())),
            Resolved::default()
        );
        let bad = Published {
            contract: Some(Err("missing field `transactional`".into())),
            ..Published::default()
        };
        let r = resolve(None, Some(&bad));
        assert!(r.contract.is_none());
        assert!(r.disagreements[0].contains("cannot be read"));
        // An unannotated tool with a read-only contract stays read-only.
        let r = resolve(Some(&contract(false, &[])), Some(&Published::default()));
        assert!(!r.contract.unwrap().transactional);
    }

    #[test]
    fn listed_tools_are_read_with_their_contracts_and_hints() {
        let tools = vec![
            serde_json::json!({"name": "a", "inputSchema": {"type": "object"},
                "annotations": {"destructiveHint": true},
                "_meta": {"dev.troupe/contract": {"transactional": false, "requires_confirmation": false}}}),
            serde_json::json!({"name": "b", "_meta": {"dev.troupe/contract": {"transactional": 1}}}),
            serde_json::json!("not a tool"),
        ];
        let p = published_of(&tools);
        assert_eq!(p.len(), 2);
        assert_eq!(p["a"].destructive, Some(true));
        assert!(matches!(p["a"].contract, Some(Ok(_))));
        assert!(matches!(p["b"].contract, Some(Err(_))));
    }
}
