//! Idempotency keys of runs started on a client's behalf: a client that
//! calls again with the key of its first call (after a timeout, a lost
//! answer, a retry) gets the run that key started instead of a second run
//! whose effects would happen twice.
//!
//! The key is recorded in the transaction that creates the run, under a
//! unique constraint: of any number of concurrent starts with one key,
//! exactly one creates a run, and the others find it.

use crate::db::args;
use crate::{NewRun, Store, StoreError};

/// What a start with an idempotency key did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyed {
    /// It created this run.
    Created(i64),
    /// The key had started this run already: nothing was created.
    Existing(i64),
}

impl Store {
    /// The run an idempotency key started, if any.
    pub fn run_for_key(&self, key: &str) -> Result<Option<i64>, StoreError> {
        self.with("read the idempotency key", |db| {
            db.query_opt("SELECT run FROM run_keys WHERE key = ?1", args![key])?
                .map(|r| r.get::<i64>(0))
                .transpose()
        })
    }

    /// Creates `run` under the idempotency key `key`, unless the key
    /// started a run already (see the module doc).
    pub fn create_run_keyed(&self, run: &NewRun, key: &str) -> Result<Keyed, StoreError> {
        if let Some(existing) = self.run_for_key(key)? {
            return Ok(Keyed::Existing(existing));
        }
        let created = self.create_run_then(run, |db, id| {
            db.execute(
                "INSERT INTO run_keys(key, run) VALUES (?1, ?2)",
                args![key, id],
            )
            .map(|_| ())
        });
        match created {
            Ok(id) => Ok(Keyed::Created(id)),
            // Another start took the key meanwhile: its transaction won the
            // unique constraint, ours created nothing.
            Err(e) => match self.run_for_key(key)? {
                Some(existing) => Ok(Keyed::Existing(existing)),
                None => Err(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Durability;
    use crate::testing::{bare_run, both};

    #[test]
    fn of_many_starts_with_one_key_exactly_one_creates_a_run() {
        let dir = tempfile::tempdir().unwrap();
        for (store, _db) in both(dir.path(), Durability::Normal) {
            let results: Vec<Keyed> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..8)
                    .map(|_| {
                        let store = store.clone();
                        s.spawn(move || store.create_run_keyed(&bare_run("f"), "call-1").unwrap())
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let created: Vec<i64> = results
                .iter()
                .filter_map(|k| match k {
                    Keyed::Created(id) => Some(*id),
                    Keyed::Existing(_) => None,
                })
                .collect();
            assert_eq!(created.len(), 1, "{results:?}");
            assert!(results.iter().all(
                |k| matches!(k, Keyed::Created(id) | Keyed::Existing(id) if *id == created[0])
            ));
            assert_eq!(store.runs(None).unwrap().len(), 1);
            // Another key, another run; a deleted run frees its key.
            let other = store.create_run_keyed(&bare_run("f"), "call-2").unwrap();
            assert!(matches!(other, Keyed::Created(id) if id != created[0]));
            store.delete_run(created[0]).unwrap();
            assert_eq!(store.run_for_key("call-1").unwrap(), None);
        }
    }
}
