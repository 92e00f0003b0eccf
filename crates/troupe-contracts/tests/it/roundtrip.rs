//! Φ⁻¹ ∘ Φ⁺ is the identity on every SGD service of train and dev; Φ⁻¹ ∘ Φ loses
//! exactly what the loss report says.

use crate::common;

use troupe_contracts::invert::{MappingStatus, invert};
use troupe_contracts::mcp::parse_tool_lists;
use troupe_contracts::phi::{ToolListsDocument, phi, phi_plus, phi_schema};
use troupe_contracts::sgd::SgdService;

#[test]
fn the_data_has_the_documented_size() {
    let train = common::sgd_services("train");
    let dev = common::sgd_services("dev");
    let intents = |services: &[SgdService]| services.iter().map(|s| s.intents.len()).sum::<usize>();
    assert_eq!((train.len(), intents(&train)), (26, 53));
    assert_eq!((dev.len(), intents(&dev)), (17, 30));
}

#[test]
fn phi_plus_inverts_exactly_for_every_service() {
    for (split, service) in common::all_sgd_services() {
        let (services, report) = invert(&phi_plus(&service)).unwrap();
        assert_eq!(
            services,
            vec![service.clone()],
            "{split}/{}",
            service.service_name
        );
        assert!(
            report.is_lossless(),
            "{split}/{}: {report:#?}",
            service.service_name
        );
    }
}

#[test]
fn phi_plus_inverts_exactly_through_json_text() {
    for split in ["train", "dev", "dev-reversed"] {
        let mut services = common::sgd_services(split.trim_end_matches("-reversed"));
        if split.ends_with("-reversed") {
            services.reverse(); // not alphabetical: the document's order must be kept
        }
        let lists = phi_schema(&services, true);
        let text = serde_json::to_string_pretty(&ToolListsDocument(&lists)).unwrap();
        let lists = parse_tool_lists("document", &text).unwrap();
        let mut recovered = Vec::new();
        for list in &lists {
            recovered.extend(invert(list).unwrap().0);
        }
        assert_eq!(recovered, services, "{split}");
    }
}

/// What plain MCP cannot keep: the service description, the slot table's order and its
/// non-categorical possible values, and the order of optional and result slots.
fn forget_what_mcp_loses(service: &SgdService) -> SgdService {
    let mut service = service.clone();
    service.description.clear();
    service.slots.sort_by(|a, b| a.name.cmp(&b.name));
    for slot in &mut service.slots {
        if !slot.is_categorical {
            slot.possible_values.clear();
        }
    }
    for intent in &mut service.intents {
        intent.optional_slots.sort();
        intent.result_slots.sort();
    }
    service
}

#[test]
fn plain_phi_loses_exactly_what_the_report_says() {
    for (split, service) in common::all_sgd_services() {
        let (services, report) = invert(&phi(&service)).unwrap();
        let [recovered] = &services[..] else {
            panic!("{split}/{}: one service expected", service.service_name)
        };
        assert_eq!(
            forget_what_mcp_loses(recovered),
            forget_what_mcp_loses(&service),
            "{split}/{}",
            service.service_name
        );
        // Everything maps (SGD slots are strings), but not losslessly.
        assert_eq!(report.count(MappingStatus::Unmappable), 0);
        let missing: Vec<&str> = report
            .notes
            .iter()
            .filter(|note| note.status == MappingStatus::Missing)
            .map(|note| note.subject.as_str())
            .collect();
        assert_eq!(missing, vec!["sample values", "service description"]);
        for (intent, tool) in service.intents.iter().zip(&report.tools) {
            let order_noted = tool
                .notes
                .iter()
                .any(|note| note.subject == "result slot order");
            assert_eq!(order_noted, intent.result_slots.len() > 1, "{}", tool.tool);
            assert!(
                tool.notes
                    .iter()
                    .any(|note| note.subject == "is_transactional"
                        && note.status == MappingStatus::Lossy)
            );
        }
    }
}

/// An MCP+ contract with relations and failure modes SGD cannot hold: every one is
/// named in the loss report.
#[test]
fn the_train_booking_contracts_report_what_sgd_cannot_hold() {
    use troupe_contracts::contract::{apply_sidecar, load_sidecar};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let sidecar = load_sidecar(&root.join("train_booking.contracts.json")).unwrap();
    let names: Vec<serde_json::Value> = sidecar
        .keys()
        .map(|name| serde_json::json!({"name": name, "description": "x"}))
        .collect();
    let mut list = troupe_contracts::mcp::parse_tool_lists(
        "booking",
        &serde_json::json!({"tools": names}).to_string(),
    )
    .unwrap()
    .remove(0);
    assert!(apply_sidecar(&mut list, &sidecar).is_empty());
    let (_, report) = invert(&list).unwrap();
    let book = report
        .tools
        .iter()
        .find(|t| t.tool == "book_ticket")
        .unwrap();
    let unmappable: Vec<&str> = book
        .notes
        .iter()
        .filter(|n| n.status == MappingStatus::Unmappable)
        .map(|n| n.detail.as_str())
        .collect();
    for want in [
        "`requires check_balance`",
        "`requires get_user`",
        "`precedes print_ticket`",
        "`insufficient_funds`",
        "`unknown_user`",
        "confirmation must show",
    ] {
        assert!(
            unmappable.iter().any(|d| d.contains(want)),
            "{want}: {unmappable:#?}"
        );
    }
    // Φ⁺'s own failure modes and produces relations are not losses.
    assert!(!unmappable.iter().any(|d| d.contains("`MissingSlots`")));
}

#[test]
fn the_real_mcp_servers_invert_partially() {
    for path in common::mcp_tool_files() {
        for list in common::mcp_tools(&path) {
            let (services, report) = invert(&list).unwrap();
            assert_eq!(services.len(), 1, "{}", path.display());
            assert_eq!(services[0].intents.len(), list.tools.len());
            assert_eq!(report.tools.len(), list.tools.len());
            assert!(!report.is_lossless(), "{}", path.display());
        }
    }
}
