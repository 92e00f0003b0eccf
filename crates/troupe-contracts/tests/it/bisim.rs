//! On every service of train and dev: structurally SGD ~ Φ(SGD) (the paper's theorem);
//! behaviourally SGD ≁ MCP exactly where information is lost (transactional intents lose
//! their confirmation step), with a shortest counterexample, and SGD ~ MCP+ everywhere.

use crate::common;

use std::time::Instant;

use troupe_contracts::render::render_bisim;
use troupe_contracts::semantics::{Label, compare_service};

#[test]
fn sgd_differs_from_mcp_exactly_on_transactional_intents() {
    let started = Instant::now();
    let services = common::all_sgd_services();
    let mut failures = 0;
    for (split, service) in &services {
        let verdict = compare_service(service).unwrap();
        let name = format!("{split}/{}", service.service_name);
        assert!(
            verdict.structural.is_none(),
            "{name}: structurally SGD ≁ Φ(SGD)"
        );
        assert!(
            verdict
                .intents
                .iter()
                .all(|i| i.structural.is_none() && i.skipped.is_none())
        );
        assert!(verdict.mcp_plus.is_none(), "{name}: SGD ≁ MCP+");
        let any_transactional = service.intents.iter().any(|intent| intent.is_transactional);
        assert_eq!(verdict.mcp.is_some(), any_transactional, "{name}");
        for intent in &verdict.intents {
            assert!(intent.mcp_plus.is_none(), "{name}/{}", intent.intent);
            assert_eq!(
                intent.mcp.is_some(),
                intent.transactional,
                "{name}/{}",
                intent.intent
            );
            if let Some(counterexample) = &intent.mcp {
                failures += 1;
                // The shortest trace collects every required slot once and invokes.
                let required = service
                    .intent(&intent.intent)
                    .map(|i| i.required_slots.len())
                    .unwrap_or_default();
                assert_eq!(
                    counterexample.trace.len(),
                    1 + required + 1,
                    "{name}/{}",
                    intent.intent
                );
                assert_eq!(
                    counterexample.trace.last(),
                    Some(&Label::Invoke(intent.tool.clone()))
                );
                assert!(
                    counterexample
                        .left_only
                        .contains(&Label::Confirm(intent.tool.clone()))
                );
                assert_eq!(
                    counterexample.right_only,
                    vec![Label::Execute(intent.tool.clone())]
                );
            }
        }
    }
    assert_eq!(failures, 24 + 13, "transactional intents of train and dev");
    eprintln!(
        "bisim over {} services: {:?}",
        services.len(),
        started.elapsed()
    );
}

#[test]
fn renders_a_counterexample() {
    let services = common::sgd_services("train");
    let banks = services
        .iter()
        .find(|s| s.service_name == "Banks_1")
        .unwrap();
    let verdict = compare_service(banks).unwrap();
    insta::assert_snapshot!(render_bisim(&[verdict]));
}
