//! A compact binary encoding of events and values, for the event log and
//! recorded action results. Varints for integers; decoding never panics and
//! rejects truncated or malformed input.

use std::sync::Arc;
use troupe_check::Value;
use troupe_check::ir::{LifelineId, StmtId};
use troupe_check::types::{EnumId, RecordId};
use troupe_msc::{Event, Message};
use troupe_project::ControlTag;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed record at byte {at}: {what}")]
pub struct DecodeError {
    pub at: usize,
    pub what: &'static str,
}

pub fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

pub fn encode_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Bool(false) => out.push(0),
        Value::Bool(true) => out.push(1),
        Value::Int(n) => {
            out.push(2);
            put_varint(out, zigzag(*n));
        }
        Value::Float(x) => {
            out.push(3);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Value::Text(s) => {
            out.push(4);
            put_varint(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        Value::Enum(id, i) => {
            out.push(5);
            put_varint(out, u64::from(id.0));
            put_varint(out, u64::from(*i));
        }
        Value::Record(id, fields) => {
            out.push(6);
            put_varint(out, u64::from(id.0));
            encode_values(out, fields);
        }
        Value::List(items) => {
            out.push(7);
            encode_values(out, items);
        }
        Value::Json(j) => {
            out.push(8);
            let text = j.to_string();
            put_varint(out, text.len() as u64);
            out.extend_from_slice(text.as_bytes());
        }
    }
}

pub fn encode_values(out: &mut Vec<u8>, values: &[Value]) {
    put_varint(out, values.len() as u64);
    for v in values {
        encode_value(out, v);
    }
}

fn encode_opt_values(out: &mut Vec<u8>, values: &Option<Vec<Value>>) {
    match values {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            encode_values(out, v);
        }
    }
}

/// Appends one message (as events and the monitor's channels carry it).
pub fn encode_message(out: &mut Vec<u8>, msg: &Message) {
    match msg {
        Message::Data { stmt, values } => {
            out.push(0);
            put_varint(out, u64::from(stmt.0));
            encode_opt_values(out, values);
        }
        Message::Control {
            stmt,
            tag,
            decision,
        } => {
            out.push(1);
            put_varint(out, u64::from(stmt.0));
            out.extend_from_slice(&tag.0.to_le_bytes());
            out.push(u8::from(*decision));
        }
    }
}

/// Appends one event of `lifeline`.
pub fn encode_event(out: &mut Vec<u8>, lifeline: LifelineId, event: &Event) {
    let (tag, peer, msg) = match event {
        Event::Send { to, msg } => (0u8, to.0, Some(msg)),
        Event::Recv { from, msg } => (1, from.0, Some(msg)),
        Event::Act { .. } => (2, 0, None),
        Event::Decide { .. } => (3, 0, None),
    };
    out.push(tag);
    put_varint(out, u64::from(lifeline.0));
    match event {
        Event::Send { .. } | Event::Recv { .. } => {
            put_varint(out, u64::from(peer));
            if let Some(msg) = msg {
                encode_message(out, msg);
            }
        }
        Event::Act { stmt, outputs } => {
            put_varint(out, u64::from(stmt.0));
            encode_opt_values(out, outputs);
        }
        Event::Decide {
            stmt,
            tag,
            decision,
        } => {
            put_varint(out, u64::from(stmt.0));
            out.extend_from_slice(&tag.0.to_le_bytes());
            out.push(u8::from(*decision));
        }
    }
}

/// Reads values and events back.
#[derive(Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: u32,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader {
            bytes,
            pos: 0,
            depth: 0,
        }
    }

    pub fn is_done(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    pub(crate) fn fail<T>(&self, what: &'static str) -> Result<T, DecodeError> {
        Err(DecodeError { at: self.pos, what })
    }

    pub(crate) fn byte(&mut self) -> Result<u8, DecodeError> {
        match self.bytes.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => self.fail("unexpected end"),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.bytes.len() - self.pos < n {
            return self.fail("unexpected end");
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        self.fail("varint too long")
    }

    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        let n = self.varint()?;
        u32::try_from(n).or_else(|_| self.fail("number out of range"))
    }

    /// The bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn len(&mut self) -> Result<usize, DecodeError> {
        let n = self.varint()?;
        // A length can never exceed what is left: rejects absurd allocations.
        if n > (self.bytes.len() - self.pos) as u64 {
            return self.fail("length beyond the end");
        }
        Ok(n as usize)
    }

    pub(crate) fn u64_le(&mut self) -> Result<u64, DecodeError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    pub(crate) fn text(&mut self) -> Result<&'a str, DecodeError> {
        let n = self.len()?;
        let b = self.take(n)?;
        std::str::from_utf8(b).or_else(|_| self.fail("invalid UTF-8"))
    }

    pub fn value(&mut self) -> Result<Value, DecodeError> {
        self.depth += 1;
        if self.depth > 256 {
            return self.fail("nesting too deep");
        }
        let v = match self.byte()? {
            0 => Value::Bool(false),
            1 => Value::Bool(true),
            2 => Value::Int(unzigzag(self.varint()?)),
            3 => Value::Float(f64::from_bits(self.u64_le()?)),
            4 => Value::text(self.text()?),
            5 => Value::Enum(EnumId(self.u32()?), self.u32()?),
            6 => {
                let id = RecordId(self.u32()?);
                Value::Record(id, self.values()?.into())
            }
            7 => Value::List(self.values()?.into()),
            8 => {
                let text = self.text()?;
                let json = serde_json::from_str(text).or_else(|_| self.fail("invalid JSON"))?;
                Value::Json(Arc::new(json))
            }
            _ => return self.fail("unknown value tag"),
        };
        self.depth -= 1;
        Ok(v)
    }

    pub fn values(&mut self) -> Result<Vec<Value>, DecodeError> {
        let n = self.len()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.value()?);
        }
        Ok(out)
    }

    fn opt_values(&mut self) -> Result<Option<Vec<Value>>, DecodeError> {
        match self.byte()? {
            0 => Ok(None),
            1 => Ok(Some(self.values()?)),
            _ => self.fail("bad option tag"),
        }
    }

    pub fn message(&mut self) -> Result<Message, DecodeError> {
        Ok(match self.byte()? {
            0 => Message::Data {
                stmt: StmtId(self.u32()?),
                values: self.opt_values()?,
            },
            1 => {
                let stmt = StmtId(self.u32()?);
                let tag = ControlTag(self.u64_le()?);
                Message::Control {
                    stmt,
                    tag,
                    decision: self.byte()? != 0,
                }
            }
            _ => return self.fail("unknown message tag"),
        })
    }

    pub fn event(&mut self) -> Result<(LifelineId, Event), DecodeError> {
        let tag = self.byte()?;
        let lifeline = LifelineId(self.u32()?);
        let event = match tag {
            0 | 1 => {
                let peer = LifelineId(self.u32()?);
                let msg = self.message()?;
                if tag == 0 {
                    Event::Send { to: peer, msg }
                } else {
                    Event::Recv { from: peer, msg }
                }
            }
            2 => Event::Act {
                stmt: StmtId(self.u32()?),
                outputs: self.opt_values()?,
            },
            3 => {
                let stmt = StmtId(self.u32()?);
                let tag = ControlTag(self.u64_le()?);
                Event::Decide {
                    stmt,
                    tag,
                    decision: self.byte()? != 0,
                }
            }
            _ => return self.fail("unknown event tag"),
        };
        Ok((lifeline, event))
    }
}

/// Decodes a whole chunk of events.
pub fn decode_events(bytes: &[u8]) -> Result<Vec<(LifelineId, Event)>, DecodeError> {
    let mut r = Reader::new(bytes);
    let mut out = Vec::new();
    while !r.is_done() {
        out.push(r.event()?);
    }
    Ok(out)
}

/// FNV-1a of bytes, stable across processes (input hashes, fingerprints,
/// checksums): the workspace's one implementation.
pub use troupe_check::hash::fnv64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_values_round_trip() {
        let values = vec![
            Value::Int(-5),
            Value::Int(i64::MAX),
            Value::Float(0.5),
            Value::text("héllo"),
            Value::Enum(EnumId(1), 2),
            Value::Record(RecordId(0), vec![Value::Bool(true)].into()),
            Value::List(vec![Value::Int(1)].into()),
            Value::Json(Arc::new(serde_json::json!({"a": [1, null]}))),
        ];
        let events = vec![
            (
                LifelineId(0),
                Event::Send {
                    to: LifelineId(1),
                    msg: Message::Data {
                        stmt: StmtId(3),
                        values: Some(values.clone()),
                    },
                },
            ),
            (
                LifelineId(1),
                Event::Recv {
                    from: LifelineId(0),
                    msg: Message::Control {
                        stmt: StmtId(9),
                        tag: ControlTag(u64::MAX),
                        decision: true,
                    },
                },
            ),
            (
                LifelineId(2),
                Event::Act {
                    stmt: StmtId(4),
                    outputs: None,
                },
            ),
            (
                LifelineId(0),
                Event::Decide {
                    stmt: StmtId(1),
                    tag: ControlTag(7),
                    decision: false,
                },
            ),
        ];
        let mut buf = Vec::new();
        for (l, e) in &events {
            encode_event(&mut buf, *l, e);
        }
        assert_eq!(decode_events(&buf).unwrap(), events);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bytes in [
            &[0u8, 0, 0, 0, 9][..],
            &[
                2, 0, 1, 1, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 1,
            ],
            &[7],
        ] {
            assert!(decode_events(bytes).is_err());
        }
        let mut state = 12345u64;
        for _ in 0..2000 {
            let len = (state % 40) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            let _ = decode_events(&bytes);
        }
    }
}
