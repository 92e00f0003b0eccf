//! Validity and completeness of executions.
//!
//! Receives are matched to sends per channel in FIFO order: the k-th receive
//! at q from p is matched with the k-th send at p to q. A channel is an
//! ordered pair of lifelines and a lane: the branches of a `par` have
//! channels of their own, and [`validate_lanes`] is told each message's
//! lane (from its statement); [`validate`] puts every message in one lane. An execution is valid when every receive has a match, matched
//! payloads agree, and the causal order (local order plus send → matching
//! receive) has no cycle. It is complete when, moreover, every send is matched.

use crate::event::{Event, Execution};
use std::collections::HashMap;
use troupe_check::ir::LifelineId;

/// Why an execution is not valid. Positions are (lifeline, index in its word).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("the execution has {found} words but the workflow has {expected} lifelines")]
    WrongArity { found: usize, expected: usize },
    #[error("event {index} of lifeline #{}: lifeline #{} does not exist (or is the same lifeline)", lifeline.0, peer.0)]
    BadPeer {
        lifeline: LifelineId,
        index: usize,
        peer: LifelineId,
    },
    #[error("event {index} of lifeline #{} receives from lifeline #{}, which sent nothing more on that channel", lifeline.0, from.0)]
    Unmatched {
        lifeline: LifelineId,
        index: usize,
        from: LifelineId,
    },
    #[error("event {index} of lifeline #{} receives a message that does not agree with the one sent (event {send_index} of lifeline #{})", lifeline.0, from.0)]
    PayloadMismatch {
        lifeline: LifelineId,
        index: usize,
        from: LifelineId,
        send_index: usize,
    },
    #[error("event {index} of lifeline #{} can never happen: the causal order has a cycle through it", lifeline.0)]
    Cycle { lifeline: LifelineId, index: usize },
    #[error("event {index} of lifeline #{} sends to lifeline #{}, which never receives it", lifeline.0, to.0)]
    Unreceived {
        lifeline: LifelineId,
        index: usize,
        to: LifelineId,
    },
}

/// For every receive, the index (in the sender's word) of its matching send.
struct Matching {
    /// `recv_match[l][i]` for a receive at (l, i).
    recv_match: Vec<Vec<usize>>,
    /// Per channel, the positions of its sends (in the sender's word) and how
    /// many of them were received.
    channels: HashMap<(u32, u32, u32), (Vec<usize>, usize)>,
}

/// The lane of a message's statement.
pub type LaneOf<'a> = &'a dyn Fn(troupe_check::ir::StmtId) -> u32;

fn matching(exec: &Execution, lifelines: usize, lane: LaneOf<'_>) -> Result<Matching, Invalid> {
    if exec.words.len() != lifelines {
        return Err(Invalid::WrongArity {
            found: exec.words.len(),
            expected: lifelines,
        });
    }
    let mut channels: HashMap<(u32, u32, u32), (Vec<usize>, usize)> = HashMap::new();
    for (p, word) in exec.words.iter().enumerate() {
        for (i, e) in word.iter().enumerate() {
            if let Event::Send { to, msg } = e {
                if to.0 as usize >= lifelines || to.0 as usize == p {
                    return Err(Invalid::BadPeer {
                        lifeline: LifelineId(p as u32),
                        index: i,
                        peer: *to,
                    });
                }
                channels
                    .entry((p as u32, to.0, lane(msg.stmt())))
                    .or_default()
                    .0
                    .push(i);
            }
        }
    }
    let mut recv_match: Vec<Vec<usize>> = exec
        .words
        .iter()
        .map(|w| vec![usize::MAX; w.len()])
        .collect();
    for (q, word) in exec.words.iter().enumerate() {
        for (i, e) in word.iter().enumerate() {
            let Event::Recv { from, msg } = e else {
                continue;
            };
            let here = LifelineId(q as u32);
            if from.0 as usize >= lifelines || from.0 as usize == q {
                return Err(Invalid::BadPeer {
                    lifeline: here,
                    index: i,
                    peer: *from,
                });
            }
            let Some((sends, used)) = channels.get_mut(&(from.0, q as u32, lane(msg.stmt())))
            else {
                return Err(Invalid::Unmatched {
                    lifeline: here,
                    index: i,
                    from: *from,
                });
            };
            let Some(&s) = sends.get(*used) else {
                return Err(Invalid::Unmatched {
                    lifeline: here,
                    index: i,
                    from: *from,
                });
            };
            *used += 1;
            let agrees = match exec.words[from.0 as usize].get(s) {
                Some(Event::Send { msg: sent, .. }) => sent.agrees_with(msg),
                _ => false,
            };
            if !agrees {
                return Err(Invalid::PayloadMismatch {
                    lifeline: here,
                    index: i,
                    from: *from,
                    send_index: s,
                });
            }
            recv_match[q][i] = s;
        }
    }
    Ok(Matching {
        recv_match,
        channels,
    })
}

/// Checks that `exec` is a valid execution over `lifelines` lifelines.
pub fn validate(exec: &Execution, lifelines: usize) -> Result<(), Invalid> {
    validate_lanes(exec, lifelines, &|_| 0)
}

/// [`validate`] with the channels of each lane apart.
pub fn validate_lanes(exec: &Execution, lifelines: usize, lane: LaneOf<'_>) -> Result<(), Invalid> {
    let m = matching(exec, lifelines, lane)?;
    // Acyclicity by simulation: run every lifeline as far as it can; a blocked
    // receive waits for its send and is woken when that send runs. Whatever
    // remains unexecuted lies on (or behind) a cycle.
    let n = exec.words.len();
    let mut pos = vec![0usize; n];
    let mut waiting: HashMap<(usize, usize), usize> = HashMap::new();
    let mut work: Vec<usize> = (0..n).collect();
    while let Some(l) = work.pop() {
        let word = &exec.words[l];
        while let Some(e) = word.get(pos[l]) {
            if let Event::Recv { from, .. } = e {
                let s = m.recv_match[l][pos[l]];
                if pos[from.0 as usize] <= s {
                    waiting.insert((from.0 as usize, s), l);
                    break;
                }
            }
            if let Event::Send { .. } = e
                && let Some(q) = waiting.remove(&(l, pos[l]))
            {
                work.push(q);
            }
            pos[l] += 1;
        }
    }
    for (l, word) in exec.words.iter().enumerate() {
        if pos[l] < word.len() {
            return Err(Invalid::Cycle {
                lifeline: LifelineId(l as u32),
                index: pos[l],
            });
        }
    }
    Ok(())
}

/// Checks that `exec` is valid and complete: every send is received.
pub fn validate_complete(exec: &Execution, lifelines: usize) -> Result<(), Invalid> {
    validate_complete_lanes(exec, lifelines, &|_| 0)
}

/// [`validate_complete`] with the channels of each lane apart.
pub fn validate_complete_lanes(
    exec: &Execution,
    lifelines: usize,
    lane: LaneOf<'_>,
) -> Result<(), Invalid> {
    validate_lanes(exec, lifelines, lane)?;
    let m = matching(exec, lifelines, lane)?;
    let mut first: Option<(LifelineId, usize, LifelineId)> = None;
    for (&(p, q, _), (sends, used)) in &m.channels {
        if let Some(&i) = sends.get(*used) {
            let cand = (LifelineId(p), i, LifelineId(q));
            if first.is_none_or(|f| (cand.0, cand.1) < (f.0, f.1)) {
                first = Some(cand);
            }
        }
    }
    match first {
        Some((lifeline, index, to)) => Err(Invalid::Unreceived {
            lifeline,
            index,
            to,
        }),
        None => Ok(()),
    }
}
