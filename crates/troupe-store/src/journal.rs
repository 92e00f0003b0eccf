//! `StoreJournal`: a run's [`RunJournal`] in the store.
//!
//! Events are encoded into a buffer and handed to the writer in chunks of
//! about 64 KiB without waiting: a crash may lose the last chunks, which the
//! resumed run recomputes. A resumed run replays from its start; the journal
//! drops each lifeline's events up to the count already stored, so no event
//! is recorded twice. Step results, effect starts and the end of the run are
//! durable before the corresponding future resolves.

use crate::codec::{self, Reader};
use crate::writer::{Op, Writer};
use crate::{Store, StoreError};
use rusqlite::params;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use troupe_check::ir::LifelineId;
use troupe_check::{TypeTable, Value};
use troupe_llm::BoxFuture;
use troupe_msc::Event;
use troupe_runtime::{Recorded, RunError, RunJournal, StepKey, StepKind};

const CHUNK: usize = 64 * 1024;

pub struct StoreJournal {
    run: i64,
    writer: Writer,
    types: Arc<TypeTable>,
    buffer: Mutex<Buffer>,
    recorded: HashMap<String, Recorded>,
}

impl std::fmt::Debug for StoreJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreJournal")
            .field("run", &self.run)
            .field("recorded", &self.recorded.len())
            .finish()
    }
}

struct Buffer {
    bytes: Vec<u8>,
    count: u32,
    next_chunk: i64,
    /// Events seen so far per lifeline in this process.
    seen: Vec<u64>,
    /// Events already in the store per lifeline (from before a restart).
    stored: Vec<u64>,
}

impl StoreJournal {
    pub(crate) fn open(
        store: &Store,
        run: i64,
        types: Arc<TypeTable>,
    ) -> Result<StoreJournal, StoreError> {
        let lifelines: i64 = store
            .with("load the run", |c| {
                c.query_row(
                    "SELECT lifelines FROM runs WHERE id = ?1",
                    params![run],
                    |r| r.get(0),
                )
                .map(Some)
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(e),
                })
            })?
            .ok_or_else(|| StoreError::UnknownRun(Store::run_name(run)))?;
        let mut stored = vec![0u64; lifelines.max(0) as usize];
        let mut next_chunk = 0;
        let chunks: Vec<(i64, Vec<u8>)> = store.with("load the events", |c| {
            let mut stmt =
                c.prepare("SELECT chunk, data FROM events WHERE run = ?1 ORDER BY chunk")?;
            let rows = stmt.query_map(params![run], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })?;
        for (chunk, data) in chunks {
            let events = codec::decode_events(&data).map_err(|e| StoreError::Corrupt {
                path: store.path().to_owned(),
                message: format!("run {run}, event chunk {chunk}: {e}"),
            })?;
            for (l, _) in events {
                if let Some(n) = stored.get_mut(l.0 as usize) {
                    *n += 1;
                }
            }
            next_chunk = chunk + 1;
        }
        let steps: Vec<(String, String, Option<Vec<u8>>)> = store.with("load the steps", |c| {
            let mut stmt = c.prepare("SELECT key, status, outputs FROM steps WHERE run = ?1")?;
            let rows = stmt.query_map(params![run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect()
        })?;
        let mut recorded = HashMap::new();
        for (key, status, outputs) in steps {
            let entry = match (status.as_str(), outputs) {
                ("done", Some(bytes)) => {
                    let values = Reader::new(&bytes)
                        .values()
                        .map_err(|e| StoreError::Corrupt {
                            path: store.path().to_owned(),
                            message: format!("run {run}, step {key}: {e}"),
                        })?;
                    Recorded::Done(values)
                }
                _ => Recorded::Started,
            };
            recorded.insert(key, entry);
        }
        let writer = store.writer().map_err(|message| StoreError::Open {
            path: store.path().to_owned(),
            message,
        })?;
        Ok(StoreJournal {
            run,
            writer,
            types,
            buffer: Mutex::new(Buffer {
                bytes: Vec::with_capacity(CHUNK + 1024),
                count: 0,
                next_chunk,
                seen: stored.iter().map(|_| 0).collect(),
                stored,
            }),
            recorded,
        })
    }

    /// Steps already recorded when the journal was opened.
    pub fn recorded_steps(&self) -> usize {
        self.recorded.len()
    }

    /// The buffered events as one write, if there are any.
    fn take_chunk(&self, buf: &mut Buffer) -> Option<Op> {
        if buf.bytes.is_empty() {
            return None;
        }
        let data = std::mem::replace(&mut buf.bytes, Vec::with_capacity(CHUNK + 1024));
        let op = Op::Events {
            run: self.run,
            chunk: buf.next_chunk,
            count: buf.count,
            data,
        };
        buf.next_chunk += 1;
        buf.count = 0;
        Some(op)
    }

    /// Hands the buffered events to the writer.
    fn flush(&self, buf: &mut Buffer) -> Result<(), String> {
        match self.take_chunk(buf) {
            Some(op) => self.writer.send(op),
            None => Ok(()),
        }
    }

    /// Queues the buffered events and `op` as one transaction, and waits
    /// for it to be durable: one commit per durable record.
    fn durable(&self, op: Op) -> BoxFuture<'static, Result<(), String>> {
        let op = match self.buffer.lock() {
            Ok(mut buf) => match self.take_chunk(&mut buf) {
                Some(events) => Ok(Op::Batch(vec![events, op])),
                None => Ok(op),
            },
            Err(_) => Err("the journal was poisoned".to_owned()),
        };
        let rx = op.map(|op| self.writer.send_durable(op));
        Box::pin(async move {
            match rx {
                Ok(rx) => rx
                    .await
                    .unwrap_or_else(|_| Err("the store writer stopped".to_owned())),
                Err(e) => Err(e),
            }
        })
    }
}

fn input_hash(args: &[Value]) -> String {
    let mut bytes = Vec::new();
    codec::encode_values(&mut bytes, args);
    format!("{:016x}", codec::fnv64(&bytes))
}

impl RunJournal for StoreJournal {
    fn event(&self, lifeline: LifelineId, event: &Event) {
        let Ok(mut buf) = self.buffer.lock() else {
            return;
        };
        let l = lifeline.0 as usize;
        if l >= buf.seen.len() {
            buf.seen.resize(l + 1, 0);
            buf.stored.resize(l + 1, 0);
        }
        buf.seen[l] += 1;
        if buf.seen[l] <= buf.stored[l] {
            // Replayed after a restart: already in the store.
            return;
        }
        codec::encode_event(&mut buf.bytes, lifeline, event);
        buf.count += 1;
        if buf.bytes.len() >= CHUNK {
            // A failure here resurfaces at the next durable write.
            let _ = self.flush(&mut buf);
        }
    }

    fn recorded(&self, key: &StepKey) -> Option<Recorded> {
        self.recorded.get(&key.to_string()).cloned()
    }

    fn begin_effect(
        &self,
        key: &StepKey,
        kind: StepKind,
        args: &[Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        self.durable(Op::StepStarted {
            run: self.run,
            key: key.to_string(),
            kind: kind.as_str(),
            lifeline: key.lifeline.clone(),
            action: key.action.clone(),
            input_hash: input_hash(args),
        })
    }

    fn record(
        &self,
        key: &StepKey,
        kind: StepKind,
        args: &[Value],
        outputs: &[Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        let mut bin = Vec::new();
        codec::encode_values(&mut bin, outputs);
        let json =
            serde_json::Value::Array(outputs.iter().map(|v| v.to_json(&self.types)).collect());
        self.durable(Op::StepDone {
            run: self.run,
            key: key.to_string(),
            kind: kind.as_str(),
            lifeline: key.lifeline.clone(),
            action: key.action.clone(),
            input_hash: input_hash(args),
            outputs: bin,
            outputs_json: json.to_string(),
        })
    }

    fn forget_effect(&self, key: &StepKey) -> BoxFuture<'static, Result<(), String>> {
        self.durable(Op::StepForget {
            run: self.run,
            key: key.to_string(),
        })
    }

    fn flush(&self) -> BoxFuture<'static, Result<(), String>> {
        let op = match self.buffer.lock() {
            Ok(mut buf) => self.take_chunk(&mut buf),
            Err(_) => return Box::pin(async { Err("the journal was poisoned".to_owned()) }),
        };
        match op {
            Some(op) => {
                let rx = self.writer.send_durable(op);
                Box::pin(async move {
                    rx.await
                        .unwrap_or_else(|_| Err("the store writer stopped".to_owned()))
                })
            }
            None => Box::pin(async { Ok(()) }),
        }
    }

    fn finish(
        &self,
        outcome: Result<&[(String, Value)], &RunError>,
    ) -> BoxFuture<'static, Result<(), String>> {
        let op = match outcome {
            Ok(results) => {
                let obj: serde_json::Map<String, serde_json::Value> = results
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json(&self.types)))
                    .collect();
                Op::Finish {
                    run: self.run,
                    status: crate::RunStatus::Done,
                    result: Some(serde_json::Value::Object(obj).to_string()),
                    error: None,
                }
            }
            Err(e) => Op::Finish {
                run: self.run,
                status: crate::RunStatus::Failed,
                result: None,
                error: Some(e.to_string()),
            },
        };
        self.durable(op)
    }
}
