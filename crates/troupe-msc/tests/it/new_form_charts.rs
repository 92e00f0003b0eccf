//! Snapshots of the charts (Mermaid and SVG) and projections of the
//! examples that use `for`, `import`/`call`, `par` and `coregion`: a `for`
//! is a `loop` naming its list; a call is one box, or with `inline` a
//! tinted frame around the inlined statements; a `par` is Mermaid's
//! `par … and … end`, and so is a coregion (one section per message).

use troupe_msc::{ChartOptions, chart_mermaid, chart_svg};

fn load(name: &str) -> troupe_check::ir::Program {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    let loaded = troupe_check::load_file(&path).unwrap();
    let (program, d) = loaded.check();
    program.unwrap_or_else(|| panic!("{name}: {d:#?}"))
}

/// Blocks balance and every line is one Mermaid knows.
fn well_formed(text: &str) {
    let mut depth = 0i32;
    for line in text.lines().skip(1) {
        let t = line.trim();
        if t.starts_with("loop ")
            || t.starts_with("alt ")
            || t.starts_with("par ")
            || t.starts_with("rect rgb(")
        {
            depth += 1;
        } else if t == "end" {
            depth -= 1;
            assert!(depth >= 0, "unbalanced: {text}");
        } else {
            assert!(
                t.starts_with("participant ")
                    || t.starts_with("Note over P")
                    || t.starts_with("else ")
                    || t.starts_with("and ")
                    || t.contains("->>")
                    || t.contains("--)"),
                "unknown line {t:?}"
            );
        }
    }
    assert_eq!(depth, 0, "{text}");
}

fn opts(inline: bool) -> ChartOptions {
    ChartOptions {
        show_control: false,
        inline,
    }
}

#[test]
fn for_documents_chart_and_projection() {
    let p = load("for_documents.troupe");
    let w = p.workflow("digest").unwrap();
    let m = chart_mermaid(&p, w, &opts(false));
    well_formed(&m);
    insta::assert_snapshot!("for_documents_mermaid", m);
    let svg = chart_svg(&p, w, &opts(false));
    assert!(svg.contains("[for doc in docs] @ Editor"), "{svg}");
    let projection = troupe_project::project(&p, w).unwrap();
    let mut text = troupe_project::render_text(&projection, &p, w, None);
    for c in &projection.constructs {
        text = text.replace(&c.tag.to_string(), &format!("κ(s{})", c.stmt.0));
    }
    insta::assert_snapshot!("for_documents_projection", text);
}

#[test]
fn split_review_chart_boxed_and_inline_and_projection() {
    let p = load("split_review.troupe");
    let w = p.workflow("two_sections").unwrap();
    for inline in [false, true] {
        let m = chart_mermaid(&p, w, &opts(inline));
        well_formed(&m);
        insta::assert_snapshot!(format!("split_review_mermaid_inline_{inline}"), m);
        let svg = chart_svg(&p, w, &opts(inline));
        assert!(
            svg.starts_with("<svg") && svg.contains("call reviewed[Author = Bob"),
            "{svg}"
        );
        let projection = troupe_project::project(&p, w).unwrap();
        let mut text = troupe_project::render_text_with(&projection, &p, w, None, inline);
        for c in &projection.constructs {
            text = text.replace(&c.tag.to_string(), &format!("κ(s{})", c.stmt.0));
        }
        insta::assert_snapshot!(format!("split_review_projection_inline_{inline}"), text);
    }
}

#[test]
fn fan_out_review_chart_and_projection() {
    let p = load("fan_out_review.troupe");
    let w = p.workflow("fan_out_review").unwrap();
    let m = chart_mermaid(&p, w, &opts(false));
    well_formed(&m);
    assert!(
        m.contains("par [branch 1]") && m.contains("and [branch 3]"),
        "{m}"
    );
    insta::assert_snapshot!("fan_out_review_mermaid", m);
    let svg = chart_svg(&p, w, &opts(false));
    assert!(
        svg.starts_with("<svg") && svg.contains(">par<") && svg.contains("[coregion] @ Editor"),
        "{svg}"
    );
    let projection = troupe_project::project(&p, w).unwrap();
    let mut text = troupe_project::render_text(&projection, &p, w, None);
    for c in &projection.constructs {
        text = text.replace(&c.tag.to_string(), &format!("κ(s{})", c.stmt.0));
    }
    insta::assert_snapshot!("fan_out_review_projection", text);
    // The decision inside a branch is told only to that branch's lifelines.
    let p = load("../crates/troupe-check/tests/corpus/ok/par.troupe");
    let w = &p.workflows[0];
    let projection = troupe_project::project(&p, w).unwrap();
    let inside = projection
        .constructs
        .iter()
        .find(|c| w.lifeline(c.owner).name == "Ana")
        .expect("the `if` of branch 1");
    let told: Vec<&str> = inside
        .notify
        .iter()
        .map(|l| w.lifeline(*l).name.as_str())
        .collect();
    assert_eq!(told, ["Ben"]);
    assert_eq!(
        projection.lanes.of(inside.stmt),
        1,
        "the `if` is in branch 1's lane"
    );
    let mut text = troupe_project::render_text(&projection, &p, w, None);
    for c in &projection.constructs {
        text = text.replace(&c.tag.to_string(), &format!("κ(s{})", c.stmt.0));
    }
    insta::assert_snapshot!("corpus_par_projection", text);
    let m = chart_mermaid(
        &p,
        w,
        &ChartOptions {
            show_control: true,
            inline: false,
        },
    );
    well_formed(&m);
    insta::assert_snapshot!("corpus_par_mermaid_control", m);
}
