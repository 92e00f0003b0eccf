//! Sequence charts: Mermaid text (snapshots and a syntax check) and SVG.

use troupe_check::Value;
use troupe_msc::chart::{mermaid, svg};
use troupe_msc::{
    Chart, ChartOptions, Decisions, FrameKind, Item, Semantics, SimOptions, chart_mermaid,
    chart_svg, execution_chart, simulate,
};
use troupe_project::testing::reviewed_plan;

const CONTROL: ChartOptions = ChartOptions {
    show_control: true,
    inline: false,
};

/// Mermaid's preprocessing: entity codes `#name;` are set aside before parsing.
fn encode_entities(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('#') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let code: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !code.is_empty() && after[code.len()..].starts_with(';') {
            out.push_str("ﬂ°°");
            out.push_str(&code);
            out.push('¶');
            rest = &after[code.len() + 1..];
        } else {
            out.push('#');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// A check of the subset of `sequenceDiagram` syntax the backend emits, with
/// the lexical rules that break real diagrams: text tokens stop at `#`, `;`
/// and newlines, and the word `end` closes a block.
fn check_mermaid(text: &str) {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("sequenceDiagram"));
    let mut depth = 0i32;
    let label_ok = |label: &str, line: &str| {
        let enc = encode_entities(label);
        assert!(!enc.trim().is_empty(), "empty label: {line}");
        assert!(
            !enc.contains(['#', ';', '\n']),
            "unescaped # or ; in {line:?}"
        );
        assert!(
            !enc.to_lowercase().contains("end"),
            "unescaped `end` in {line:?}"
        );
    };
    let participant =
        |s: &str| s.starts_with('P') && s[1..].chars().all(|c| c.is_ascii_digit()) && s.len() > 1;
    for line in lines {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("participant ") {
            let (alias, name) = rest.split_once(" as ").expect("participant P as Name");
            assert!(participant(alias), "{line}");
            label_ok(name, line);
        } else if let Some(rest) = t.strip_prefix("Note over ") {
            let (who, text) = rest.split_once(": ").expect("Note over P: text");
            assert!(participant(who), "{line}");
            label_ok(text, line);
        } else if let Some(rest) = t.strip_prefix("alt ").or_else(|| t.strip_prefix("loop ")) {
            label_ok(rest, line);
            depth += 1;
        } else if let Some(rest) = t.strip_prefix("else ") {
            assert!(depth > 0, "else outside a block");
            label_ok(rest, line);
        } else if t == "end" {
            depth -= 1;
            assert!(depth >= 0, "unbalanced end");
        } else {
            let (arrow, text) = t.split_once(": ").expect("message with text");
            let (from, to) = arrow
                .split_once("->>")
                .or_else(|| arrow.split_once("--)"))
                .unwrap_or_else(|| panic!("unknown line {line:?}"));
            assert!(participant(from) && participant(to), "{line}");
            label_ok(text, line);
        }
    }
    assert_eq!(depth, 0, "unclosed blocks");
}

#[test]
fn mermaid_escapes_end_semicolons_and_hashes() {
    assert_eq!(mermaid::escape("a; b"), "a#59; b");
    assert_eq!(mermaid::escape("#1"), "#35;1");
    assert_eq!(mermaid::escape("the end"), "the #101;nd");
    assert_eq!(mermaid::escape("END of Pending"), "#69;ND of P#101;nding");
    assert_eq!(mermaid::escape("x < y"), "x #lt; y");
    assert_eq!(mermaid::escape(""), "#160;");
    let chart = Chart {
        title: "t".into(),
        lifelines: vec!["end".into(), "loop".into()],
        items: vec![
            Item::FrameStart {
                kind: FrameKind::Loop,
                label: "[x != \"end;\"] @ end".into(),
                owner: Some(0),
            },
            Item::Message {
                from: 0,
                to: 1,
                label: "send; #end".into(),
                control: false,
            },
            Item::Note {
                over: 1,
                text: "y = f(x); end".into(),
            },
            Item::FrameStart {
                kind: FrameKind::Alt,
                label: "[a]".into(),
                owner: None,
            },
            Item::FrameElse {
                label: "[else]".into(),
            },
            Item::FrameEnd,
            Item::FrameEnd,
            Item::Message {
                from: 1,
                to: 0,
                label: "".into(),
                control: true,
            },
            // An unbalanced model still yields balanced text.
            Item::FrameStart {
                kind: FrameKind::Alt,
                label: "[b]".into(),
                owner: None,
            },
        ],
    };
    let text = mermaid::render(&chart);
    check_mermaid(&text);
    insta::assert_snapshot!(text);
}

#[test]
fn reviewed_plan_mermaid() {
    let program = reviewed_plan();
    let w = &program.workflows[0];
    let plain = chart_mermaid(&program, w, &ChartOptions::default());
    check_mermaid(&plain);
    insta::assert_snapshot!("reviewed_plan", plain);
    let tag = troupe_project::project(&program, w).unwrap().constructs[0]
        .tag
        .to_string();
    let control = chart_mermaid(&program, w, &CONTROL);
    check_mermaid(&control);
    insta::assert_snapshot!("reviewed_plan_control", control.replace(&tag, "κTAG"));
}

#[test]
fn reviewed_plan_svg() {
    let program = reviewed_plan();
    let w = &program.workflows[0];
    for opts in [ChartOptions::default(), CONTROL] {
        let s = chart_svg(&program, w, &opts);
        assert!(s.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(s.trim_end().ends_with("</svg>"));
        assert!(!s.contains("<script") && !s.contains("href=\"http"));
        // Balanced tags (every element is either self-closing or closed).
        let opens =
            s.matches("<text").count() + s.matches("<svg").count() + s.matches("<marker").count();
        let closes = s.matches("</text>").count()
            + s.matches("</svg>").count()
            + s.matches("</marker>").count();
        assert_eq!(opens, closes);
        assert!(s.contains("loop") && s.contains("[verdict == revise] @ Reviewer"));
        assert_eq!(s.contains("stroke-dasharray=\"3 4\""), opts.show_control);
    }
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(
        dir.join("reviewed_plan.svg"),
        chart_svg(&program, w, &CONTROL),
    )
    .unwrap();
}

#[test]
fn svg_escapes_text() {
    let chart = Chart {
        title: "<&>".into(),
        lifelines: vec!["A".into(), "B".into()],
        items: vec![Item::Message {
            from: 0,
            to: 1,
            label: "a < b && \"c\"".into(),
            control: false,
        }],
    };
    let s = svg::render(&chart);
    assert!(s.contains("a &lt; b &amp;&amp; &quot;c&quot;"));
    assert!(s.contains("<title>&lt;&amp;&gt;</title>"));
}

#[test]
fn execution_chart_of_a_run() {
    let program = reviewed_plan();
    let w = &program.workflows[0];
    let sem = Semantics::new(&program, w).unwrap();
    // The first seeded run that goes once round the loop.
    let run = (0..100)
        .map(|seed| {
            let opts = SimOptions {
                seed,
                decisions: Decisions::Random { seed },
                loop_bound: Some(1),
                max_steps: 1000,
            };
            simulate(
                &program,
                w,
                sem.projection(),
                &[Value::text("a trip; to the end")],
                &opts,
            )
            .unwrap()
        })
        .find(|run| {
            run.execution.words[2]
                .iter()
                .any(|e| matches!(e, troupe_msc::Event::Decide { decision: true, .. }))
        })
        .unwrap();
    assert!(run.completed());
    let tag = sem.projection().constructs[0].tag.to_string();
    for show_control in [false, true] {
        let chart = execution_chart(
            &program,
            w,
            &run.execution,
            &ChartOptions {
                show_control,
                inline: false,
            },
        );
        let sends = run.execution.words.iter().flatten().filter(|e| matches!(e, troupe_msc::Event::Send { msg, .. } if show_control || !msg.is_control())).count();
        let drawn = chart
            .items
            .iter()
            .filter(|i| matches!(i, Item::Message { .. }))
            .count();
        assert_eq!(sends, drawn);
        let text = mermaid::render(&chart);
        check_mermaid(&text);
        insta::assert_snapshot!(
            format!("run_control_{show_control}"),
            text.replace(&tag, "κTAG")
        );
        let s = svg::render(&chart);
        assert!(s.contains("a trip#59;") || s.contains("a trip; to the end"));
    }
}

#[test]
fn example_charts() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for file in [
        "reviewed_execution.troupe",
        "consensus.troupe",
        "train_booking.troupe",
        "local_approval.troupe",
    ] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let (program, diags) = troupe_check::check_text(&text);
        let program = program.unwrap_or_else(|| panic!("{file}: {diags:?}"));
        for w in &program.workflows {
            let p = troupe_project::project(&program, w).unwrap();
            let mut m = chart_mermaid(&program, w, &CONTROL);
            check_mermaid(&m);
            for c in &p.constructs {
                m = m.replace(&c.tag.to_string(), &format!("κ(s{})", c.stmt.0));
            }
            insta::assert_snapshot!(format!("example_{}", w.name), m);
            let s = chart_svg(&program, w, &CONTROL);
            let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("{}.svg", w.name));
            std::fs::write(out, s).unwrap();
        }
    }
}
