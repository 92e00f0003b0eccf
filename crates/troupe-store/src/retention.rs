//! Retention: how much of a run's history the store keeps.
//!
//! A run's state is in its latest checkpoint, so the events before it are
//! needed only to look at or verify the run's past. By default they are all
//! kept (and only the latest checkpoint is). With a bound `keep`, the store
//! keeps the events from the newest checkpoint that has at least `keep`
//! events after it, and the checkpoints from that one on: the retained
//! window always starts at a checkpoint, from which `troupe verify` checks
//! it. So a run's events in the store stay under `keep` plus one
//! checkpoint interval, however long it runs. Steps, tasks and results are
//! never pruned: they are what a resumed run and its people need.

use crate::db::{Db, DbError, args};

/// After a checkpoint at `seq` events: drops the checkpoints (and with
/// `keep`, the events) the run no longer needs.
pub(crate) fn apply(tx: &mut dyn Db, run: i64, seq: i64, keep: Option<u64>) -> Result<(), DbError> {
    let Some(keep) = keep else {
        tx.execute(
            "DELETE FROM checkpoints WHERE run = ?1 AND seq < ?2",
            args![run, seq],
        )?;
        return Ok(());
    };
    let horizon = seq.saturating_sub(keep.min(i64::MAX as u64) as i64);
    let base = tx.query_opt(
        "SELECT seq, chunk FROM checkpoints WHERE run = ?1 AND seq <= ?2
         ORDER BY seq DESC LIMIT 1",
        args![run, horizon],
    )?;
    if let Some(base) = base {
        let (base_seq, base_chunk): (i64, i64) = (base.get(0)?, base.get(1)?);
        tx.execute(
            "DELETE FROM events WHERE run = ?1 AND chunk < ?2",
            args![run, base_chunk],
        )?;
        tx.execute(
            "DELETE FROM checkpoints WHERE run = ?1 AND seq < ?2",
            args![run, base_seq],
        )?;
        // The retained history starts at the base checkpoint.
        tx.execute(
            "UPDATE runs SET pruned = ?2 WHERE id = ?1 AND pruned < ?2",
            args![run, base_seq],
        )?;
    }
    Ok(())
}
