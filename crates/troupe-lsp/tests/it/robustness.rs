//! The server and the analysis never panic or hang: random bytes on the
//! wire, mutated examples at random positions, pathological nesting.

use std::io::Cursor;
use troupe_lsp::Analysis;
use troupe_lsp::analysis::ContractCache;
use troupe_syntax::Span;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Runs the server on `input` to its end and returns what it wrote.
fn serve(input: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::new();
    troupe_lsp::serve(Cursor::new(input), &mut out).unwrap();
    out
}

#[test]
fn random_frames_are_answered_and_never_stop_the_server() {
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let init =
        frame(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}"#);
    let methods = [
        "textDocument/hover",
        "textDocument/definition",
        "textDocument/references",
        "textDocument/completion",
        "textDocument/rename",
        "textDocument/codeAction",
        "workspace/executeCommand",
        "textDocument/didChange",
        "textDocument/didOpen",
    ];
    for round in 0..200 {
        let mut input = init.clone();
        for _ in 0..8 {
            let body: Vec<u8> = match rng.below(3) {
                // Random bytes.
                0 => (0..rng.below(64)).map(|_| rng.next() as u8).collect(),
                // A real method with random (often wrong) params.
                1 => {
                    let m = methods[rng.below(methods.len())];
                    let line = rng.next() % 5000;
                    let ch = rng.next() % 5000;
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{round},"method":"{m}","params":{{"textDocument":{{"uri":"file:///x.troupe","text":"workflow w(x: Int @ A) {{ msg A(x) -> B(y) }}","version":1}},"position":{{"line":{line},"character":{ch}}},"newName":"q","contentChanges":[{{"range":{{"start":{{"line":{line},"character":0}},"end":{{"line":0,"character":{ch}}}}},"text":"é\u{{0}}"}}],"range":{{"start":{{"line":0,"character":0}},"end":{{"line":{line},"character":1}}}},"context":{{"diagnostics":[]}},"command":"troupe.project","arguments":["file:///x.troupe"]}}}}"#
                    )
                    .into_bytes()
                }
                // Valid JSON of the wrong shape.
                _ => br#"{"jsonrpc":"2.0","id":[1,2],"method":7}"#.to_vec(),
            };
            input.extend(frame(&body));
        }
        // Sometimes a frame cut short, a lying Content-Length or a missing one.
        match rng.below(4) {
            0 => input.extend_from_slice(b"Content-Length: 99999\r\n\r\n{\"jsonrpc\""),
            1 => input.extend_from_slice(b"X-Nothing: 1\r\n\r\n{}"),
            2 => input.extend_from_slice(b"Content-Length: -3\r\n\r\n"),
            _ => {}
        }
        let out = serve(input);
        assert!(out.starts_with(b"Content-Length: "), "round {round}");
    }
}

#[test]
fn mutated_examples_answer_every_feature_at_random_offsets() {
    let root = format!("{}/../../examples", env!("CARGO_MANIFEST_DIR"));
    let mut rng = Rng(0x2545f4914f6cdd1d);
    let pieces = [
        "{", "}", "(", ")", "@", "->", "msg ", "act ", "if ", "while ", ":", ",", "\"", "\"\"\"",
        "_", "Alice", "x", "é", "\u{feff}", "\n", ".", "= ", "return ",
    ];
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "troupe") {
            continue;
        }
        let original = std::fs::read_to_string(&path).unwrap();
        for _ in 0..40 {
            let mut text = original.clone();
            for _ in 0..1 + rng.below(4) {
                let mut at = rng.below(text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                if rng.below(2) == 0 {
                    text.insert_str(at, pieces[rng.below(pieces.len())]);
                } else {
                    let mut end = (at + rng.below(12)).min(text.len());
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    text.replace_range(at..end, "");
                }
            }
            let a = Analysis::new(text.clone(), None, &mut ContractCache::default());
            let _ = a.outline();
            for _ in 0..20 {
                let off = rng.below(text.len() + 8);
                let _ = a.hover(off);
                let _ = a.definition(off);
                let _ = a.references(off, true);
                let _ = a.completions(off);
                let _ = a.rename(off, "renamed");
                let _ = a.lifeline_at(off);
                let _ = a.projection(off);
                let _ = a.chart(off, true);
                let s = Span::new(off.min(text.len()), (off + 30).min(text.len()));
                for fix in a.fixes(s) {
                    for (span, _) in fix.edits {
                        assert!(
                            span.end as usize <= text.len()
                                && text.is_char_boundary(span.start as usize)
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn pathological_nesting_is_analysed_without_overflow() {
    let deep_blocks = format!(
        "workflow w(x: Bool @ A) {{\n{}{}\n}}\n",
        "if x @ A {\n".repeat(5000),
        "}\n".repeat(5000)
    );
    let deep_parens = format!(
        "workflow w(x: Int @ A) {{ act A: y = {}x{} }}\n",
        "(".repeat(20000),
        ")".repeat(20000)
    );
    for text in [deep_blocks, deep_parens] {
        let a = Analysis::new(text.clone(), None, &mut ContractCache::default());
        assert!(!a.diagnostics.is_empty(), "deep nesting is reported");
        let _ = a.hover(text.len() / 2);
        let _ = a.completions(text.len() / 2);
        let _ = a.outline();
    }
}
