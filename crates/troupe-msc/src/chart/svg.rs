//! The SVG backend: a self-contained sequence chart (inline styles, system
//! fonts, no scripts), laid out from estimated text widths.
//!
//! Layout: column centres are placed left to right so that every label fits
//! between the columns it spans (a requirement `x[hi] - x[lo] ≥ d`, satisfied
//! in one pass in order of `hi`, since shifting columns ≥ hi never shrinks an
//! earlier gap). Rows are stacked top to bottom; frames are sized in a second
//! pass from the extent of what they contain.

use super::{Chart, FrameKind, Item};
use std::fmt::Write as _;

const FONT: f64 = 13.0;
const MARGIN: f64 = 24.0;
const HEADER_H: f64 = 34.0;
const ROW_MSG: f64 = 38.0;
const ROW_NOTE: f64 = 36.0;
const NOTE_H: f64 = 26.0;
const ROW_FRAME: f64 = 34.0;
const ROW_ELSE: f64 = 30.0;
const ROW_END: f64 = 16.0;
const FRAME_PAD: f64 = 14.0;
const MAX_LABEL: usize = 80;

/// Estimated rendered width of `s` at the chart font size.
fn text_width(s: &str) -> f64 {
    s.chars()
        .map(|c| match c {
            'i' | 'l' | 'j' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | '(' | ')' | '[' | ']'
            | ' ' => 0.32,
            'm' | 'w' | 'M' | 'W' => 0.86,
            c if c.is_ascii_uppercase() => 0.66,
            c if c.is_ascii() => 0.56,
            c if (c as u32) >= 0x2E80 => 1.0,
            _ => 0.62,
        })
        .sum::<f64>()
        * FONT
}

fn clip(s: &str) -> String {
    if s.chars().count() > MAX_LABEL {
        format!("{}…", s.chars().take(MAX_LABEL - 1).collect::<String>())
    } else {
        s.to_owned()
    }
}

/// Escapes text for SVG character data and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' => {}
            '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

struct FrameBox {
    kind: FrameKind,
    label: String,
    top: f64,
    bottom: f64,
    left: f64,
    right: f64,
    elses: Vec<(f64, String)>,
    depth: usize,
}

/// Renders `chart` as a standalone SVG document.
pub fn render(chart: &Chart) -> String {
    let n = chart.lifelines.len().max(1);
    let names: Vec<String> = (0..n)
        .map(|i| clip(chart.lifelines.get(i).map_or("", String::as_str)))
        .collect();
    let header_w: Vec<f64> = names
        .iter()
        .map(|s| (text_width(s) + 28.0).max(84.0))
        .collect();
    let col = |i: usize| i.min(n - 1);

    // Column placement from label requirements.
    let mut reqs: Vec<(usize, usize, f64)> = Vec::new();
    for i in 0..n.saturating_sub(1) {
        reqs.push((i, i + 1, header_w[i] / 2.0 + header_w[i + 1] / 2.0 + 28.0));
    }
    let mut left_need = header_w[0] / 2.0;
    let mut right_need = header_w[n - 1] / 2.0;
    for item in &chart.items {
        match item {
            Item::Message {
                from, to, label, ..
            } => {
                let (a, b) = (col(*from).min(col(*to)), col(*from).max(col(*to)));
                let w = text_width(&clip(label)) + 36.0;
                if a == b {
                    // A self-message: its label sits right of the column.
                    if b + 1 < n {
                        reqs.push((b, b + 1, w + 30.0));
                    } else {
                        right_need = right_need.max(w + 30.0);
                    }
                } else {
                    reqs.push((a, b, w));
                }
            }
            Item::Note { over, text } => {
                let c = col(*over);
                let half = (text_width(&clip(text)) + 24.0) / 2.0;
                if c > 0 {
                    reqs.push((c - 1, c, half + 24.0));
                } else {
                    left_need = left_need.max(half);
                }
                if c + 1 < n {
                    reqs.push((c, c + 1, half + 24.0));
                } else {
                    right_need = right_need.max(half);
                }
            }
            Item::Ref { from, to, text } => {
                let (a, b) = (col(*from).min(col(*to)), col(*from).max(col(*to)));
                let w = text_width(&clip(text)) + 36.0;
                if a == b {
                    let half = w / 2.0;
                    if a > 0 {
                        reqs.push((a - 1, a, half + 24.0));
                    } else {
                        left_need = left_need.max(half);
                    }
                    if a + 1 < n {
                        reqs.push((a, a + 1, half + 24.0));
                    } else {
                        right_need = right_need.max(half);
                    }
                } else {
                    reqs.push((a, b, w - 2.0 * FRAME_PAD));
                }
            }
            _ => {}
        }
    }
    reqs.sort_by(|x, y| x.1.cmp(&y.1).then(y.0.cmp(&x.0)));
    let mut xs = vec![0.0f64; n];
    xs[0] = MARGIN + left_need;
    for i in 1..n {
        xs[i] = xs[i - 1];
    }
    for (a, b, d) in reqs {
        let gap = xs[b] - xs[a];
        if gap < d {
            let shift = d - gap;
            for x in xs.iter_mut().skip(b) {
                *x += shift;
            }
        }
    }

    // Rows, and frames sized from their contents.
    let mut y = MARGIN + HEADER_H + 18.0;
    let mut rows: Vec<(f64, &Item)> = Vec::with_capacity(chart.items.len());
    let mut stack: Vec<FrameBox> = Vec::new();
    let mut frames: Vec<FrameBox> = Vec::new();
    let extend = |stack: &mut Vec<FrameBox>, lo: f64, hi: f64| {
        if let Some(f) = stack.last_mut() {
            f.left = f.left.min(lo);
            f.right = f.right.max(hi);
        }
    };
    for item in &chart.items {
        match item {
            Item::Message {
                from, to, label, ..
            } => {
                rows.push((y, item));
                let (a, b) = (
                    xs[col(*from)].min(xs[col(*to)]),
                    xs[col(*from)].max(xs[col(*to)]),
                );
                let b = if a == b {
                    b + text_width(&clip(label)) + 40.0
                } else {
                    b
                };
                extend(&mut stack, a, b);
                y += ROW_MSG;
            }
            Item::Note { over, text } => {
                rows.push((y, item));
                let half = (text_width(&clip(text)) + 24.0) / 2.0;
                let x = xs[col(*over)];
                extend(&mut stack, x - half, x + half);
                y += ROW_NOTE;
            }
            Item::FrameStart { kind, label, owner } => {
                let x = owner.map(|o| xs[col(o)]);
                stack.push(FrameBox {
                    kind: *kind,
                    label: clip(label),
                    top: y,
                    bottom: y,
                    left: x.unwrap_or(f64::INFINITY),
                    right: x.unwrap_or(f64::NEG_INFINITY),
                    elses: Vec::new(),
                    depth: stack.len(),
                });
                y += ROW_FRAME;
            }
            Item::Ref { from, to, text } => {
                rows.push((y, item));
                let (a, b) = (
                    xs[col(*from)].min(xs[col(*to)]),
                    xs[col(*from)].max(xs[col(*to)]),
                );
                let half = (text_width(&clip(text)) + 24.0) / 2.0;
                let mid = (a + b) / 2.0;
                extend(
                    &mut stack,
                    (a - FRAME_PAD).min(mid - half),
                    (b + FRAME_PAD).max(mid + half),
                );
                y += ROW_NOTE;
            }
            Item::FrameElse { label } => {
                if let Some(f) = stack.last_mut() {
                    f.elses.push((y + 4.0, clip(label)));
                }
                y += ROW_ELSE;
            }
            Item::FrameEnd => {
                if let Some(mut f) = stack.pop() {
                    close_frame(&mut f, y, &xs);
                    let (l, r) = (f.left, f.right);
                    frames.push(f);
                    extend(&mut stack, l, r);
                }
                y += ROW_END;
            }
        }
    }
    while let Some(mut f) = stack.pop() {
        close_frame(&mut f, y, &xs);
        let (l, r) = (f.left, f.right);
        frames.push(f);
        extend(&mut stack, l, r);
        y += ROW_END;
    }
    let body_bottom = y + 6.0;

    // Everything must fit right of the margin.
    let min_left = frames
        .iter()
        .map(|f| f.left)
        .fold(xs[0] - left_need, f64::min);
    let dx = (MARGIN - min_left).max(0.0);
    let max_right = frames
        .iter()
        .map(|f| f.right)
        .fold(xs[n - 1] + right_need, f64::max);
    let width = (max_right + dx + MARGIN).ceil();
    let height = (body_bottom + HEADER_H + MARGIN).ceil();
    let x = |i: usize| xs[col(i)] + dx;

    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="-apple-system, BlinkMacSystemFont, 'Segoe UI', Helvetica, Arial, sans-serif" font-size="{FONT}">
<title>{}</title>
<defs>
<marker id="arrow" viewBox="0 0 10 10" refX="9.5" refY="5" markerWidth="9" markerHeight="9" orient="auto-start-reverse"><path d="M0,0.5 L10,5 L0,9.5 z" fill="#1f2937"/></marker>
<marker id="arrow-control" viewBox="0 0 10 10" refX="9.5" refY="5" markerWidth="9" markerHeight="9" orient="auto-start-reverse"><path d="M0.5,0.5 L9.5,5 L0.5,9.5" fill="none" stroke="#7c3aed" stroke-width="1.6"/></marker>
</defs>
<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>
"##,
        escape(&chart.title)
    );

    // Lifeline rules.
    let top_y = MARGIN;
    for i in 0..n {
        let _ = writeln!(
            s,
            r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#9ca3af" stroke-width="1.2" stroke-dasharray="5 4"/>"##,
            x(i),
            top_y + HEADER_H,
            x(i),
            body_bottom
        );
    }

    // Frames, outermost first so inner ones paint over them.
    frames.sort_by(|a, b| a.depth.cmp(&b.depth).then(a.top.total_cmp(&b.top)));
    for f in &frames {
        let (stroke, fill) = match f.kind {
            FrameKind::Alt => ("#2563eb", "#eff6ff"),
            FrameKind::Loop => ("#d97706", "#fffbeb"),
            FrameKind::Call => ("#059669", "#ecfdf5"),
            FrameKind::Par => ("#7c3aed", "#f5f3ff"),
            FrameKind::Plan => ("#db2777", "#fdf2f8"),
        };
        let (l, r) = (f.left + dx, f.right + dx);
        let _ = writeln!(
            s,
            r##"<rect x="{l:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="8" fill="{fill}" fill-opacity="0.75" stroke="{stroke}" stroke-width="1.4"/>"##,
            f.top,
            r - l,
            f.bottom - f.top
        );
        let kw = f.kind.keyword();
        let tab_w = text_width(kw) + 18.0;
        let _ = writeln!(
            s,
            r##"<path d="M{l:.1},{:.1} a8,8 0 0 1 8,-8 h{:.1} v14 l-6,8 h{:.1} z" fill="{stroke}"/>"##,
            f.top + 8.0,
            tab_w - 8.0,
            -(tab_w - 6.0),
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" fill="#ffffff" font-weight="700" font-size="12">{kw}</text>"##,
            l + 8.0,
            f.top + 16.0
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" fill="#111827" font-weight="600">{}</text>"##,
            l + tab_w + 10.0,
            f.top + 17.0,
            escape(&f.label)
        );
        for (ey, label) in &f.elses {
            let _ = writeln!(
                s,
                r##"<line x1="{l:.1}" y1="{ey:.1}" x2="{r:.1}" y2="{ey:.1}" stroke="{stroke}" stroke-width="1.2" stroke-dasharray="6 4"/>"##
            );
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" fill="#374151" font-style="italic">{}</text>"##,
                l + 10.0,
                ey + 17.0,
                escape(label)
            );
        }
    }

    // Messages and notes.
    for (ry, item) in rows {
        match item {
            Item::Message {
                from,
                to,
                label,
                control,
            } => {
                let (x1, x2) = (x(*from), x(*to));
                let (stroke, marker, dash) = if *control {
                    ("#7c3aed", "arrow-control", r#" stroke-dasharray="3 4""#)
                } else {
                    ("#1f2937", "arrow", "")
                };
                let label = escape(&clip(label));
                let ay = ry + 24.0;
                if (x1 - x2).abs() < 0.5 {
                    let _ = writeln!(
                        s,
                        r##"<path d="M{x1:.1},{:.1} h34 v14 h-33" fill="none" stroke="{stroke}" stroke-width="1.5"{dash} marker-end="url(#{marker})"/>"##,
                        ay - 6.0
                    );
                    let _ = writeln!(
                        s,
                        r##"<text x="{:.1}" y="{:.1}" fill="{stroke}">{label}</text>"##,
                        x1 + 40.0,
                        ay + 4.0
                    );
                } else {
                    let end = if x2 > x1 { x2 - 1.5 } else { x2 + 1.5 };
                    let _ = writeln!(
                        s,
                        r##"<line x1="{x1:.1}" y1="{ay:.1}" x2="{end:.1}" y2="{ay:.1}" stroke="{stroke}" stroke-width="1.5"{dash} marker-end="url(#{marker})"/>"##
                    );
                    let _ = writeln!(
                        s,
                        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="{}">{label}</text>"##,
                        (x1 + x2) / 2.0,
                        ay - 7.0,
                        if *control { stroke } else { "#111827" }
                    );
                }
            }
            Item::Note { over, text } => {
                let text = clip(text);
                let w = text_width(&text) + 24.0;
                let cx = x(*over);
                let _ = writeln!(
                    s,
                    r##"<rect x="{:.1}" y="{:.1}" width="{w:.1}" height="{NOTE_H}" rx="6" fill="#fef9c3" stroke="#ca8a04" stroke-width="1"/>"##,
                    cx - w / 2.0,
                    ry + 4.0
                );
                let _ = writeln!(
                    s,
                    r##"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" fill="#422006">{}</text>"##,
                    ry + 21.5,
                    escape(&text)
                );
            }
            Item::Ref { from, to, text } => {
                let text = clip(text);
                let (a, b) = (x(*from).min(x(*to)), x(*from).max(x(*to)));
                let mid = (a + b) / 2.0;
                let half = ((text_width(&text) + 24.0) / 2.0).max((b - a) / 2.0 + FRAME_PAD);
                let _ = writeln!(
                    s,
                    r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{NOTE_H}" rx="4" fill="#ecfdf5" stroke="#059669" stroke-width="1.4"/>"##,
                    mid - half,
                    ry + 4.0,
                    2.0 * half
                );
                let _ = writeln!(
                    s,
                    r##"<text x="{mid:.1}" y="{:.1}" text-anchor="middle" fill="#064e3b" font-weight="600">{}</text>"##,
                    ry + 21.5,
                    escape(&text)
                );
            }
            _ => {}
        }
    }

    // Header boxes, top and bottom.
    for (i, name) in names.iter().enumerate() {
        for hy in [top_y, body_bottom] {
            let w = header_w[i];
            let _ = writeln!(
                s,
                r##"<rect x="{:.1}" y="{hy:.1}" width="{w:.1}" height="{HEADER_H}" rx="8" fill="#f1f5f9" stroke="#334155" stroke-width="1.4"/>"##,
                x(i) - w / 2.0
            );
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#0f172a" font-weight="700">{}</text>"##,
                x(i),
                hy + 21.5,
                escape(name)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

fn close_frame(f: &mut FrameBox, y: f64, xs: &[f64]) {
    f.bottom = y + 6.0;
    if !f.left.is_finite() || !f.right.is_finite() {
        // An empty frame without an owner: give it the first column.
        let x = xs.first().copied().unwrap_or(MARGIN);
        f.left = x;
        f.right = x;
    }
    f.left -= FRAME_PAD;
    f.right += FRAME_PAD;
    let min_w = text_width(f.kind.keyword()) + 18.0 + 20.0 + text_width(&f.label) + 16.0;
    if f.right - f.left < min_w {
        f.right = f.left + min_w;
    }
}
