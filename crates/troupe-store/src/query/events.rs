//! A run's recorded events and checkpoints, read back: whole, by page,
//! by index range or streamed; and pruning its history to a checkpoint.
//! Apart from `query.rs` because the event log is read in many shapes
//! (resume, `troupe trace`, the web pages) that share nothing with the
//! runs' summaries.

use crate::codec;
use crate::db::args;
use crate::{Store, StoreError};
use troupe_check::ir::LifelineId;
use troupe_msc::Event;

use super::Events;

impl Store {
    /// Event chunks `(chunk, data)` of a run from `from_chunk` on, at most
    /// `limit` of them.
    pub(crate) fn chunks(
        &self,
        run: i64,
        from_chunk: i64,
        limit: Option<usize>,
    ) -> Result<Vec<(i64, Vec<u8>)>, StoreError> {
        self.with("read the events", |db| {
            let rows = match limit {
                Some(n) => db.query(
                    "SELECT chunk, data FROM events WHERE run = ?1 AND chunk >= ?2 ORDER BY chunk LIMIT ?3",
                    args![run, from_chunk, n as i64],
                )?,
                None => db.query(
                    "SELECT chunk, data FROM events WHERE run = ?1 AND chunk >= ?2 ORDER BY chunk",
                    args![run, from_chunk],
                )?,
            };
            rows.iter().map(|r| Ok((r.get(0)?, r.get(1)?))).collect()
        })
    }

    /// The event chunks of part `part` of `parts` of a placed run from
    /// `from_chunk` on (a part writes the chunks `part + k × parts`).
    pub(crate) fn part_chunks(
        &self,
        run: i64,
        from_chunk: i64,
        part: u32,
        parts: u32,
    ) -> Result<Vec<(i64, Vec<u8>)>, StoreError> {
        self.with("read the part's events", |db| {
            db.query(
                "SELECT chunk, data FROM events WHERE run = ?1 AND chunk >= ?2 AND chunk % ?3 = ?4 ORDER BY chunk",
                args![run, from_chunk, parts.max(1), part],
            )?
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .collect()
        })
    }

    /// The recorded events of a run, in the order they were recorded, from
    /// chunk `from_chunk` on; also returns the next chunk number (for `--follow`).
    pub fn events(
        &self,
        run: i64,
        from_chunk: i64,
    ) -> Result<(Vec<(LifelineId, Event)>, i64), StoreError> {
        let chunks = self.chunks(run, from_chunk, None)?;
        self.decode_chunks(run, from_chunk, chunks)
    }

    /// At most `max_chunks` chunks of a run's events from chunk
    /// `from_chunk` on, and the next chunk number: a page of a long run.
    pub fn events_page(
        &self,
        run: i64,
        from_chunk: i64,
        max_chunks: usize,
    ) -> Result<(Vec<(LifelineId, Event)>, i64), StoreError> {
        let chunks = self.chunks(run, from_chunk, Some(max_chunks))?;
        self.decode_chunks(run, from_chunk, chunks)
    }

    /// The retained events of a run with indices in `range` (counted from
    /// the first retained event), reading only the chunks that hold them;
    /// also returns how many events are retained and the chunk after the
    /// last one (to follow the run from there).
    pub fn events_range(
        &self,
        run: i64,
        range: std::ops::Range<u64>,
    ) -> Result<(Events, u64, i64), StoreError> {
        let (total, _, next_chunk) = self.count_events(run)?;
        // From the newest chunk back, until the range's start: a window
        // near the end (what pages show) reads only the last chunks.
        let counts: Vec<(i64, i64)> = self.with("count the events", |db| {
            db.query(
                "SELECT chunk, count FROM events WHERE run = ?1 AND chunk < ?2 ORDER BY chunk DESC",
                args![run, next_chunk],
            )?
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .collect()
        })?;
        let mut chunks = Vec::new();
        let mut end = total;
        for (chunk, n) in counts {
            let n = n.max(0) as u64;
            let start = end.saturating_sub(n);
            if start < range.end && end > range.start {
                chunks.push((chunk, start));
            }
            if start <= range.start {
                break;
            }
            end = start;
        }
        let mut out = Vec::new();
        for (chunk, start) in chunks.into_iter().rev() {
            let (events, _) = self.events_page(run, chunk, 1)?;
            for (i, e) in events.into_iter().enumerate() {
                if range.contains(&(start + i as u64)) {
                    out.push(e);
                }
            }
        }
        Ok((out, total, next_chunk))
    }

    /// How many events of a run the store holds, how many retention
    /// pruned, and the chunk after the last: from the latest checkpoint
    /// (which knows how many came before it) and the chunks after it, so
    /// counting a long run does not read its history.
    pub(super) fn count_events(&self, run: i64) -> Result<(u64, u64, i64), StoreError> {
        self.with("count the events", |db| {
            let r = db.query_one(
                "SELECT r.pruned, k.seq, k.chunk FROM runs r
                 LEFT JOIN (SELECT seq, chunk FROM checkpoints WHERE run = ?1 ORDER BY seq DESC LIMIT 1) k ON 1 = 1
                 WHERE r.id = ?1",
                args![run],
            )?;
            let pruned: i64 = r.get(0)?;
            let seq: Option<i64> = r.get(1)?;
            let chunk: Option<i64> = r.get(2)?;
            let (before, from) = match seq.zip(chunk) {
                Some((seq, chunk)) => ((seq - pruned).max(0), chunk),
                None => (0, 0),
            };
            let r = db.query_one(
                "SELECT CAST(coalesce(sum(count), 0) AS BIGINT), max(chunk) FROM events WHERE run = ?1 AND chunk >= ?2",
                args![run, from],
            )?;
            let (tail, last): (i64, Option<i64>) = (r.get(0)?, r.get(1)?);
            let next = last.map_or(from, |l| l + 1);
            Ok(((before + tail).max(0) as u64, pruned.max(0) as u64, next))
        })
    }

    fn decode_chunks(
        &self,
        run: i64,
        from_chunk: i64,
        chunks: Vec<(i64, Vec<u8>)>,
    ) -> Result<(Vec<(LifelineId, Event)>, i64), StoreError> {
        let mut out = Vec::new();
        let mut next = from_chunk;
        for (chunk, data) in chunks {
            let events = codec::decode_events(&data).map_err(|e| StoreError::Corrupt {
                path: self.shown().to_owned(),
                message: format!("run {run}, chunk {chunk}: {e}"),
            })?;
            out.extend(events);
            next = chunk + 1;
        }
        Ok((out, next))
    }

    /// Streams the recorded events of a run, in the order they were
    /// recorded, one chunk in memory at a time.
    pub fn for_each_event(
        &self,
        run: i64,
        f: impl FnMut(LifelineId, &Event),
    ) -> Result<u64, StoreError> {
        self.for_each_event_from(run, 0, f)
    }

    /// [`Store::for_each_event`] from chunk `first` on.
    pub fn for_each_event_from(
        &self,
        run: i64,
        first: i64,
        mut f: impl FnMut(LifelineId, &Event),
    ) -> Result<u64, StoreError> {
        let mut n = 0u64;
        let mut next = first;
        loop {
            // A page of chunks at a time: memory follows the page, not
            // the history.
            let page = self.chunks(run, next, Some(4))?;
            let Some((last, _)) = page.last() else {
                return Ok(n);
            };
            next = last + 1;
            for (chunk, data) in page {
                let events = codec::decode_events(&data).map_err(|e| StoreError::Corrupt {
                    path: self.shown().to_owned(),
                    message: format!("run {run}, chunk {chunk}: {e}"),
                })?;
                for (l, e) in &events {
                    f(*l, e);
                    n += 1;
                }
            }
        }
    }

    /// The latest checkpoint of a run: after how many events, and its size
    /// in bytes.
    pub fn checkpoints(&self, run: i64) -> Result<Option<(u64, u64)>, StoreError> {
        self.with("read the checkpoints", |db| {
            db.query_opt(
                "SELECT seq, CAST(length(data) AS BIGINT) FROM checkpoints WHERE run = ?1 ORDER BY seq DESC LIMIT 1",
                args![run],
            )?
            .map(|r| Ok((r.get::<i64>(0)? as u64, r.get::<i64>(1)? as u64)))
            .transpose()
        })
    }

    /// Prunes a run's history to the last `keep` events at least, from a
    /// checkpoint on (see `retention.rs`); returns the events pruned now.
    /// A run without a checkpoint that old keeps its history.
    pub fn prune_history(&self, run: i64, keep: u64) -> Result<u64, StoreError> {
        let before = self.run(run)?.pruned;
        self.transaction("prune the history", |tx| {
            let total: i64 = tx
                .query_one(
                    "SELECT pruned + CAST(coalesce((SELECT sum(count) FROM events WHERE run = ?1), 0) AS BIGINT)
                     FROM runs WHERE id = ?1",
                    args![run],
                )?
                .get(0)?;
            crate::retention::apply(tx, run, total, Some(keep))
        })?;
        Ok(self.run(run)?.pruned - before)
    }

    /// Deletes a run's checkpoints: it then resumes by replaying its whole
    /// history (a baseline for benchmarks; a way out of a checkpoint one
    /// does not trust). Refused when retention pruned the history.
    pub fn forget_checkpoints(&self, run: i64) -> Result<(), StoreError> {
        if self.run(run)?.pruned > 0 {
            return Err(StoreError::Conflict(format!(
                "{}: its history before its checkpoint was pruned; the checkpoint is all there is",
                Store::run_name(run)
            )));
        }
        self.with("delete the checkpoints", |db| {
            db.execute("DELETE FROM checkpoints WHERE run = ?1", args![run])?;
            db.execute("DELETE FROM part_checkpoints WHERE run = ?1", args![run])
                .map(|_| ())
        })
    }

    /// Where a run's retained history starts when retention pruned its
    /// beginning: the checkpoint there (its monitor state is where a
    /// verification of the window starts) and the first chunk after it.
    /// `None` when nothing was pruned.
    pub fn history_start(
        &self,
        run: i64,
    ) -> Result<Option<(troupe_runtime::Checkpoint, i64)>, StoreError> {
        let row: Option<(i64, Vec<u8>)> = self.with("read the checkpoints", |db| {
            db.query_opt(
                "SELECT k.chunk, CAST(k.data AS BLOB) FROM checkpoints k JOIN runs r ON r.id = k.run
                 WHERE k.run = ?1 AND r.pruned > 0 AND k.seq = r.pruned",
                args![run],
            )?
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .transpose()
        })?;
        let pruned = self.run(run)?.pruned;
        match row {
            Some((chunk, data)) => crate::checkpoint::decode(&data)
                .map(|s| Some((s.checkpoint, chunk)))
                .map_err(|e| StoreError::Corrupt {
                    path: self.shown().to_owned(),
                    message: format!("run {run}: the checkpoint its history starts at: {e}"),
                }),
            None if pruned > 0 => Err(StoreError::Corrupt {
                path: self.shown().to_owned(),
                message: format!(
                    "run {run}: its history was pruned but the checkpoint it starts at is missing"
                ),
            }),
            None => Ok(None),
        }
    }
}
