//! The stored form of a run's checkpoint: the runtime's [`Checkpoint`]
//! (lifelines, channels, pending steps, the monitor's state) and the
//! journal's cursor (how many events of each lifeline came before it), in
//! the codec's compact binary form behind a version byte and followed by a
//! checksum. Decoding never panics: a damaged checkpoint is an error (the
//! journal then replays the history instead), and the runtime checks a
//! decoded one against the workflow before it continues from it.

use crate::codec::{DecodeError, Reader, encode_message, encode_value, fnv64, put_varint};
use troupe_check::ir::{ActionId, LifelineId, StmtId};
use troupe_msc::cpl::{Knowledge, Meta, View};
use troupe_msc::{CursorState, InFlight, MonitorState};
use troupe_project::ControlTag;
use troupe_runtime::{
    Channel, Checkpoint, LaneState, PartState, Queued, RemoteChannel, StepKey, ToolRecord,
};

/// Version 2 added the parts of `par` regions (a lifeline's further tasks,
/// its per-lane action counts, the monitor's part cursors); version 3 the
/// place of a placed run's part on the channels between parts; version 4
/// the run's successful tool calls (for the contracts' `requires` and
/// `precedes`); version 5 the fingerprints of the values of the messages
/// the monitor has in flight (it keeps no values); version 6 what each
/// lifeline has causally seen, for causal guards (and messages' metadata,
/// as tags of their own). Older checkpoints (which have none) still decode.
const VERSION: u8 = 6;

/// How deep the monitor's part cursors may nest in a decoded checkpoint
/// (as deep as constructs nest).
const MAX_PART_DEPTH: usize = 256;

/// One message on a channel: in a checkpoint, and between the parts of a
/// placed run.
/// A message with causal metadata has tags of its own (2, 3), so that the
/// encoding of one without is what it always was.
pub(crate) fn encode_queued(out: &mut Vec<u8>, m: &Queued) {
    let with_meta = u8::from(m.meta().is_some()) * 2;
    match m {
        Queued::Data { stmt, values, .. } => {
            out.push(with_meta);
            put_varint(out, u64::from(stmt.0));
            crate::codec::encode_values(out, values);
        }
        Queued::Control { tag, decision, .. } => {
            out.push(1 + with_meta);
            out.extend_from_slice(&tag.0.to_le_bytes());
            out.push(u8::from(*decision));
        }
    }
    if let Some(meta) = m.meta() {
        encode_meta(out, &meta.clock(), meta.at(), meta.once(), meta.seen());
    }
}

/// The message [`encode_queued`] wrote.
pub(crate) fn decode_queued(r: &mut Reader<'_>) -> Result<Queued, DecodeError> {
    let tag = r.byte()?;
    let mut m = match tag {
        0 | 2 => Queued::Data {
            stmt: StmtId(r.u32()?),
            values: r.values()?,
            meta: None,
        },
        1 | 3 => Queued::Control {
            tag: ControlTag(r.u64_le()?),
            decision: r.byte()? != 0,
            meta: None,
        },
        _ => return r.fail("unknown message tag"),
    };
    if tag >= 2 {
        let (clock, at, once, seen) = decode_meta(r)?;
        let meta = Some(Meta::new(Knowledge {
            clock,
            at,
            once,
            seen,
        }));
        match &mut m {
            Queued::Data { meta: slot, .. } | Queued::Control { meta: slot, .. } => *slot = meta,
        }
    }
    Ok(m)
}

/// A causal view's or a message's metadata: the clock, the `at` and
/// `once` flags (eight to a byte) and the `seen` values.
fn encode_meta(
    out: &mut Vec<u8>,
    clock: &[u64],
    at: &[bool],
    once: &[bool],
    seen: &[Option<troupe_check::Value>],
) {
    put_varint(out, clock.len() as u64);
    for c in clock {
        put_varint(out, *c);
    }
    encode_flags(out, at);
    encode_flags(out, once);
    put_varint(out, seen.len() as u64);
    for v in seen {
        match v {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                encode_value(out, v);
            }
        }
    }
}

type MetaParts = (
    Vec<u64>,
    Vec<bool>,
    Vec<bool>,
    Vec<Option<troupe_check::Value>>,
);

fn decode_meta(r: &mut Reader<'_>) -> Result<MetaParts, DecodeError> {
    let mut clock = Vec::new();
    for _ in 0..r.len()? {
        clock.push(r.varint()?);
    }
    let at = decode_flags(r)?;
    let once = decode_flags(r)?;
    let mut seen = Vec::new();
    for _ in 0..r.len()? {
        seen.push(match r.byte()? {
            0 => None,
            1 => Some(r.value()?),
            _ => return r.fail("bad option tag"),
        });
    }
    Ok((clock, at, once, seen))
}

fn encode_flags(out: &mut Vec<u8>, flags: &[bool]) {
    put_varint(out, flags.len() as u64);
    for chunk in flags.chunks(8) {
        out.push(
            chunk
                .iter()
                .enumerate()
                .fold(0u8, |b, (i, &f)| b | (u8::from(f) << i)),
        );
    }
}

fn decode_flags(r: &mut Reader<'_>) -> Result<Vec<bool>, DecodeError> {
    // Eight flags to a byte: the count may exceed the bytes left, not its
    // bytes.
    let n = r.varint()?;
    let Ok(n) = usize::try_from(n) else {
        return r.fail("too many flags");
    };
    if n.div_ceil(8) > r.remaining() {
        return r.fail("flags beyond the end");
    }
    let mut flags = Vec::with_capacity(n.min(1 << 16));
    for i in 0..n.div_ceil(8) {
        let byte = r.byte()?;
        for bit in 0..8.min(n - i * 8) {
            flags.push(byte & (1 << bit) != 0);
        }
    }
    Ok(flags)
}

/// A checkpoint with the journal's cursor.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stored {
    /// Events of each lifeline before the checkpoint.
    pub seen: Vec<u64>,
    pub checkpoint: Checkpoint,
}

pub(crate) fn encode(seen: &[u64], cp: &Checkpoint) -> Vec<u8> {
    let mut out = vec![VERSION];
    put_varint(&mut out, seen.len() as u64);
    for n in seen {
        put_varint(&mut out, *n);
    }
    put_varint(&mut out, cp.lanes.len() as u64);
    for lane in &cp.lanes {
        put_varint(&mut out, u64::from(lane.pc));
        out.push(u8::from(lane.done));
        put_varint(&mut out, lane.values.len() as u64);
        for v in &lane.values {
            match v {
                None => out.push(0),
                Some(v) => {
                    out.push(1);
                    encode_value(&mut out, v);
                }
            }
        }
        put_varint(&mut out, lane.occurrences.len() as u64);
        for (action, n) in &lane.occurrences {
            put_varint(&mut out, u64::from(*action));
            put_varint(&mut out, *n);
        }
        put_varint(&mut out, lane.parts.len() as u64);
        for part in &lane.parts {
            put_varint(&mut out, u64::from(part.pc));
            put_varint(&mut out, u64::from(part.parent));
        }
        put_varint(&mut out, lane.keyed.len() as u64);
        for (l, action, n) in &lane.keyed {
            put_varint(&mut out, u64::from(*l));
            put_varint(&mut out, u64::from(*action));
            put_varint(&mut out, *n);
        }
    }
    put_varint(&mut out, cp.channels.len() as u64);
    for c in &cp.channels {
        put_varint(&mut out, u64::from(c.from.0));
        put_varint(&mut out, u64::from(c.to.0));
        put_varint(&mut out, c.messages.len() as u64);
        for m in &c.messages {
            encode_queued(&mut out, m);
        }
    }
    put_varint(&mut out, cp.steps);
    put_varint(&mut out, cp.events);
    put_varint(&mut out, cp.pending.len() as u64);
    for key in &cp.pending {
        let text = key.to_string();
        put_varint(&mut out, text.len() as u64);
        out.extend_from_slice(text.as_bytes());
    }
    match &cp.monitor {
        None => out.push(0),
        Some(m) => {
            out.push(1);
            put_varint(&mut out, m.cursors.len() as u64);
            for c in &m.cursors {
                encode_cursor(&mut out, c);
            }
            put_varint(&mut out, m.channels.len() as u64);
            for (from, to, q) in &m.channels {
                put_varint(&mut out, u64::from(from.0));
                put_varint(&mut out, u64::from(to.0));
                put_varint(&mut out, q.len() as u64);
                for sent in q {
                    encode_message(&mut out, &sent.msg);
                    match sent.values {
                        None => out.push(0),
                        Some(f) => {
                            out.push(1);
                            out.extend_from_slice(&f.to_le_bytes());
                        }
                    }
                }
            }
            put_varint(&mut out, m.events);
        }
    }
    put_varint(&mut out, cp.crossed.len() as u64);
    for (c, n) in &cp.crossed {
        put_varint(&mut out, u64::from(c.from.0));
        put_varint(&mut out, u64::from(c.to.0));
        put_varint(&mut out, u64::from(c.lane));
        put_varint(&mut out, *n);
    }
    put_varint(&mut out, cp.tools.len() as u64);
    for t in &cp.tools {
        put_varint(&mut out, u64::from(t.action.0));
        crate::codec::encode_values(&mut out, &t.args);
        crate::codec::encode_values(&mut out, &t.outputs);
    }
    // Version 6: the lifelines' causal views, last (none: one 0 byte).
    let views = if cp.lanes.iter().any(|l| l.view.is_some()) {
        cp.lanes.len()
    } else {
        0
    };
    put_varint(&mut out, views as u64);
    for lane in cp.lanes.iter().take(views) {
        match &lane.view {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                put_varint(&mut out, u64::from(v.lifeline.0));
                let k = v.snapshot();
                encode_meta(&mut out, &k.clock, &k.at, &k.once, &k.seen);
                encode_flags(&mut out, &v.current);
            }
        }
    }
    let sum = fnv64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

fn encode_cursor(out: &mut Vec<u8>, c: &CursorState) {
    put_varint(out, c.frames.len() as u64);
    for (plan, pos, arm) in &c.frames {
        put_varint(out, u64::from(*plan));
        put_varint(out, u64::from(*pos));
        out.push(*arm);
    }
    match c.telling {
        None => out.push(0),
        Some((d, told)) => {
            out.push(1 + u8::from(d));
            put_varint(out, u64::from(told));
        }
    }
    put_varint(out, c.seen);
    put_varint(out, c.parts.len() as u64);
    for (lane, p) in &c.parts {
        put_varint(out, u64::from(*lane));
        encode_cursor(out, p);
    }
}

fn decode_cursor(
    r: &mut Reader<'_>,
    version: u8,
    depth: usize,
) -> Result<CursorState, DecodeError> {
    if depth > MAX_PART_DEPTH {
        return r.fail("parts nested too deep");
    }
    let mut frames = Vec::new();
    for _ in 0..r.len()? {
        frames.push((r.u32()?, r.u32()?, r.byte()?));
    }
    let telling = match r.byte()? {
        0 => None,
        t @ (1 | 2) => Some((t == 2, r.u32()?)),
        _ => return r.fail("bad decision tag"),
    };
    let seen = r.varint()?;
    let mut parts = Vec::new();
    if version >= 2 {
        for _ in 0..r.len()? {
            let lane = r.u32()?;
            parts.push((lane, decode_cursor(r, version, depth + 1)?));
        }
    }
    Ok(CursorState {
        frames,
        telling,
        seen,
        parts,
    })
}

pub(crate) fn decode(bytes: &[u8]) -> Result<Stored, DecodeError> {
    let damaged = DecodeError {
        at: 0,
        what: "the checksum does not match",
    };
    let (bytes, sum) = bytes
        .split_at_checked(bytes.len().wrapping_sub(8))
        .ok_or(damaged.clone())?;
    if sum.try_into().ok().map(u64::from_le_bytes) != Some(fnv64(bytes)) {
        return Err(damaged);
    }
    let mut r = Reader::new(bytes);
    let version = r.byte()?;
    if !(1..=VERSION).contains(&version) {
        return r.fail("unknown checkpoint version");
    }
    let mut seen = Vec::new();
    for _ in 0..r.len()? {
        seen.push(r.varint()?);
    }
    let mut lanes = Vec::new();
    for _ in 0..r.len()? {
        let pc = r.u32()?;
        let done = r.byte()? != 0;
        let mut values = Vec::new();
        for _ in 0..r.len()? {
            values.push(match r.byte()? {
                0 => None,
                1 => Some(r.value()?),
                _ => return r.fail("bad option tag"),
            });
        }
        let mut occurrences = Vec::new();
        for _ in 0..r.len()? {
            occurrences.push((r.u32()?, r.varint()?));
        }
        let (mut parts, mut keyed) = (Vec::new(), Vec::new());
        if version >= 2 {
            for _ in 0..r.len()? {
                parts.push(PartState {
                    pc: r.u32()?,
                    parent: r.u32()?,
                });
            }
            for _ in 0..r.len()? {
                keyed.push((r.u32()?, r.u32()?, r.varint()?));
            }
        }
        lanes.push(LaneState {
            pc,
            done,
            values,
            occurrences,
            parts,
            keyed,
            view: None,
        });
    }
    let mut channels = Vec::new();
    for _ in 0..r.len()? {
        let from = LifelineId(r.u32()?);
        let to = LifelineId(r.u32()?);
        let mut messages = Vec::new();
        for _ in 0..r.len()? {
            messages.push(decode_queued(&mut r)?);
        }
        channels.push(Channel { from, to, messages });
    }
    let steps = r.varint()?;
    let events = r.varint()?;
    let mut pending = Vec::new();
    for _ in 0..r.len()? {
        let text = r.text()?;
        match StepKey::parse(text) {
            Some(key) => pending.push(key),
            None => return r.fail("bad step key"),
        }
    }
    let monitor = match r.byte()? {
        0 => None,
        1 => {
            let mut cursors = Vec::new();
            for _ in 0..r.len()? {
                cursors.push(decode_cursor(&mut r, version, 0)?);
            }
            let mut channels = Vec::new();
            for _ in 0..r.len()? {
                let from = LifelineId(r.u32()?);
                let to = LifelineId(r.u32()?);
                let mut q = Vec::new();
                for _ in 0..r.len()? {
                    let msg = r.message()?;
                    let values = match version {
                        ..5 => None,
                        _ => match r.byte()? {
                            0 => None,
                            1 => Some(r.u64_le()?),
                            _ => return r.fail("bad fingerprint tag"),
                        },
                    };
                    q.push(InFlight { msg, values });
                }
                channels.push((from, to, q));
            }
            Some(MonitorState {
                cursors,
                channels,
                events: r.varint()?,
            })
        }
        _ => return r.fail("bad monitor tag"),
    };
    let mut crossed = Vec::new();
    if version >= 3 {
        for _ in 0..r.len()? {
            let channel = RemoteChannel {
                from: LifelineId(r.u32()?),
                to: LifelineId(r.u32()?),
                lane: r.u32()?,
            };
            crossed.push((channel, r.varint()?));
        }
    }
    let mut tools = Vec::new();
    if version >= 4 {
        for _ in 0..r.len()? {
            tools.push(ToolRecord {
                action: ActionId(r.u32()?),
                args: r.values()?,
                outputs: r.values()?,
            });
        }
    }
    if version >= 6 {
        let views = r.len()?;
        if views != 0 && views != lanes.len() {
            return r.fail("views for another number of lifelines");
        }
        for lane in lanes.iter_mut().take(views) {
            if r.byte()? == 0 {
                continue;
            }
            let lifeline = LifelineId(r.u32()?);
            let (clock, at, once, seen) = decode_meta(&mut r)?;
            let current = decode_flags(&mut r)?;
            let known = Knowledge {
                clock,
                at,
                once,
                seen,
            };
            lane.view = Some(View::from_parts(lifeline, known, current));
        }
    }
    if !r.is_done() {
        return r.fail("bytes after the checkpoint");
    }
    Ok(Stored {
        seen,
        checkpoint: Checkpoint {
            lanes,
            channels,
            steps,
            events,
            pending,
            monitor,
            crossed,
            tools,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_check::Value;
    use troupe_msc::Message;

    fn sample() -> Stored {
        Stored {
            seen: vec![3, 0, 7],
            checkpoint: Checkpoint {
                lanes: vec![
                    LaneState {
                        pc: 4,
                        done: false,
                        values: vec![Some(Value::Int(-5)), None, Some(Value::text("é"))],
                        occurrences: vec![(0, 2), (3, 1)],
                        parts: vec![
                            PartState { pc: 7, parent: 0 },
                            PartState { pc: 11, parent: 1 },
                        ],
                        keyed: vec![(2, 3, 4)],
                        view: Some(troupe_msc::cpl::View::from_parts(
                            LifelineId(0),
                            troupe_msc::cpl::Knowledge {
                                clock: vec![3, 0, 1],
                                at: vec![true, false, true, true, false, false, true, false, true],
                                once: vec![false],
                                seen: vec![Some(Value::Int(4)), None],
                            },
                            vec![true, false, false],
                        )),
                    },
                    LaneState {
                        pc: 9,
                        done: true,
                        values: vec![],
                        occurrences: vec![],
                        parts: vec![],
                        keyed: vec![],
                        view: None,
                    },
                ],
                channels: vec![Channel {
                    from: LifelineId(0),
                    to: LifelineId(1),
                    messages: vec![
                        Queued::Data {
                            stmt: StmtId(2),
                            values: vec![Value::Float(f64::NAN), Value::Bool(true)],
                            meta: Some(troupe_msc::cpl::Meta::new(troupe_msc::cpl::Knowledge {
                                clock: vec![1, 300, 0],
                                at: vec![true],
                                once: vec![],
                                seen: vec![None, Some(Value::text("x"))],
                            })),
                        },
                        Queued::Control {
                            tag: ControlTag(u64::MAX),
                            decision: false,
                            meta: None,
                        },
                    ],
                }],
                steps: 1 << 40,
                events: 12,
                pending: vec![StepKey {
                    lifeline: "A".into(),
                    action: "ask".into(),
                    occurrence: 1,
                }],
                monitor: Some(MonitorState {
                    cursors: vec![CursorState {
                        frames: vec![(0, 3, 0), (2, 1, 2)],
                        telling: Some((true, 1)),
                        seen: 5,
                        parts: vec![(
                            3,
                            CursorState {
                                frames: vec![(4, 0, 4)],
                                telling: None,
                                seen: 0,
                                parts: vec![],
                            },
                        )],
                    }],
                    channels: vec![(
                        LifelineId(1),
                        LifelineId(0),
                        vec![
                            InFlight {
                                msg: Message::Data {
                                    stmt: StmtId(1),
                                    values: None,
                                },
                                values: Some(u64::MAX - 7),
                            },
                            InFlight {
                                msg: Message::Data {
                                    stmt: StmtId(1),
                                    values: None,
                                },
                                values: None,
                            },
                        ],
                    )],
                    events: 12,
                }),
                crossed: vec![
                    (
                        RemoteChannel {
                            from: LifelineId(0),
                            to: LifelineId(2),
                            lane: 3,
                        },
                        1 << 33,
                    ),
                    (
                        RemoteChannel {
                            from: LifelineId(2),
                            to: LifelineId(1),
                            lane: 0,
                        },
                        4,
                    ),
                ],
                tools: vec![ToolRecord {
                    action: ActionId(3),
                    args: vec![Value::text("u1"), Value::Float(47.0)],
                    outputs: vec![Value::Bool(true), Value::Bool(false)],
                }],
            },
        }
    }

    /// A checkpoint written before version 3 (no channels between parts)
    /// still decodes.
    #[test]
    fn a_version_2_checkpoint_still_decodes() {
        let mut s = sample();
        s.checkpoint.crossed.clear();
        s.checkpoint.tools.clear();
        // Version 6 adds the causal views at the end, and metadata to
        // messages (with tags of their own): without them, one 0 byte.
        for lane in &mut s.checkpoint.lanes {
            lane.view = None;
        }
        for c in &mut s.checkpoint.channels {
            for m in &mut c.messages {
                match m {
                    Queued::Data { meta, .. } | Queued::Control { meta, .. } => *meta = None,
                }
            }
        }
        // Version 5 writes a fingerprint tag after each message the monitor
        // has in flight; without any, the layout is version 2's.
        if let Some(m) = &mut s.checkpoint.monitor {
            m.channels.clear();
        }
        let bytes = encode(&s.seen, &s.checkpoint);
        // Version 4 ends with the empty lists of crossings and tool calls
        // (a 0 byte each), version 6 with the empty views, before the
        // checksum.
        let mut body = bytes[..bytes.len() - 11].to_vec();
        body[0] = 2;
        let sum = fnv64(&body);
        body.extend_from_slice(&sum.to_le_bytes());
        let back = decode(&body).unwrap();
        assert_eq!(back.checkpoint.crossed, vec![]);
        assert!(back.checkpoint.tools.is_empty());
        assert_eq!(back.checkpoint.pending, s.checkpoint.pending);
        assert_eq!(back.seen, s.seen);
    }

    #[test]
    fn a_checkpoint_round_trips() {
        let s = sample();
        let bytes = encode(&s.seen, &s.checkpoint);
        let back = decode(&bytes).unwrap();
        // NaN is not equal to itself: compare the encodings.
        assert_eq!(encode(&back.seen, &back.checkpoint), bytes);
        assert_eq!(back.checkpoint.pending, s.checkpoint.pending);
        assert_eq!(back.checkpoint.monitor, s.checkpoint.monitor);
        assert_eq!(back.checkpoint.lanes[0].parts, s.checkpoint.lanes[0].parts);
        assert_eq!(back.checkpoint.lanes[0].keyed, s.checkpoint.lanes[0].keyed);
        assert_eq!(back.checkpoint.crossed, s.checkpoint.crossed);
        assert_eq!(back.checkpoint.tools, s.checkpoint.tools);
        assert_eq!(back.seen, s.seen);
    }

    #[test]
    fn every_truncation_and_flip_is_an_error() {
        let s = sample();
        let bytes = encode(&s.seen, &s.checkpoint);
        for cut in 0..bytes.len() {
            assert!(
                decode(&bytes[..cut]).is_err(),
                "a truncation at {cut} decoded"
            );
        }
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                assert!(decode(&b).is_err(), "a flip of bit {bit} at {i} decoded");
            }
        }
    }

    #[test]
    fn a_well_summed_but_malformed_body_is_an_error_not_a_panic() {
        // Garbage with a correct checksum reaches the body decoder.
        let mut x = 0x1234_5678_9abc_def0_u64;
        for len in 0..400 {
            let mut body = vec![VERSION];
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                body.push(x as u8);
            }
            let sum = fnv64(&body);
            body.extend_from_slice(&sum.to_le_bytes());
            let _ = decode(&body);
        }
    }
}
