//! The monitor's state for a checkpoint, and a monitor restored from one:
//! every cursor is checked against the workflow as it is rebuilt (a
//! position past a plan's end, a lifeline the workflow does not have, is
//! refused), so a damaged or foreign checkpoint is never followed.

use super::*;

impl Monitor {
    /// The monitor's state, for a checkpoint: where each lifeline is in its
    /// view and what is in flight. With the same workflow,
    /// [`Monitor::restore`] continues exactly where this one is.
    pub fn snapshot(&self) -> MonitorState {
        fn cursor(c: &Cursor) -> CursorState {
            CursorState {
                frames: c
                    .frames
                    .iter()
                    .map(|f| (f.plan as u32, f.pos as u32, f.arm as u8))
                    .collect(),
                telling: match c.head {
                    Head::Before => None,
                    Head::Telling { d, told } => Some((d, told as u32)),
                },
                seen: c.seen as u64,
                parts: c.parts.iter().map(|(l, p)| (*l, cursor(p))).collect(),
            }
        }
        MonitorState {
            cursors: self.cursors.iter().map(cursor).collect(),
            channels: self
                .channels
                .iter()
                .filter(|(_, q)| !q.is_empty())
                .map(|(&(from, to, _), q)| (from, to, q.iter().cloned().collect()))
                .collect(),
            events: self.events,
        }
    }

    /// A monitor of this one's workflow in the state `state` (taken by
    /// [`Monitor::snapshot`] of a monitor of the same workflow). A state
    /// that does not fit the workflow — a position past a plan's end, a
    /// lifeline it does not have — is refused, never followed.
    pub fn restore(&self, state: &MonitorState) -> Result<Monitor, String> {
        let n = self.cursors.len();
        if state.cursors.len() != n {
            return Err(format!(
                "the state has {} lifelines, the workflow {n}",
                state.cursors.len()
            ));
        }
        let mut cursors = Vec::with_capacity(n);
        for (l, c) in state.cursors.iter().enumerate() {
            cursors.push(restore_cursor(&self.plans[l], l, c, None, 0)?);
        }
        let mut channels = BTreeMap::new();
        for (from, to, q) in &state.channels {
            if from.0 as usize >= n || to.0 as usize >= n {
                return Err(format!("a channel {}→{} of no lifelines", from.0, to.0));
            }
            let Some(first) = q.first() else { continue };
            let lane = self.lanes.of(first.msg.stmt());
            if q.iter().any(|m| self.lanes.of(m.msg.stmt()) != lane) {
                return Err(format!(
                    "a channel {}→{} holds the messages of two branches",
                    from.0, to.0
                ));
            }
            let q = q.iter().map(|f| match f.msg {
                // Values (an older state's) become their fingerprint.
                Message::Data {
                    values: Some(_), ..
                } => InFlight::of(&f.msg),
                _ => f.clone(),
            });
            channels.insert((*from, *to, lane), q.collect());
        }
        Ok(Monitor {
            names: self.names.clone(),
            plans: self.plans.clone(),
            lanes: self.lanes.clone(),
            cursors,
            channels,
            events: state.events,
            failed: None,
        })
    }
}

/// Restores one cursor (a lifeline's, or a part's of lane `lane` whose plan
/// must be `part_plan`), checking that a run reaches it.
fn restore_cursor(
    plans: &[Vec<Op>],
    l: usize,
    c: &CursorState,
    part_plan: Option<usize>,
    depth: usize,
) -> Result<Cursor, String> {
    // Parts nest no deeper than the workflow's constructs.
    if depth > troupe_project::MAX_NESTING {
        return Err(format!("lifeline {l}: parts nested too deep"));
    }
    let mut frames: Vec<Frame> = Vec::with_capacity(c.frames.len());
    for &(plan, pos, arm) in &c.frames {
        let (plan, pos) = (plan as usize, pos as usize);
        let arm = match arm {
            0 => Arm::Top,
            1 => Arm::Branch,
            2 => Arm::LoopBody,
            3 => Arm::LoopExit,
            4 => Arm::Part,
            other => return Err(format!("lifeline {l}: no frame kind {other}")),
        };
        if plans.get(plan).is_none_or(|p| pos > p.len()) {
            return Err(format!("lifeline {l}: no position {pos} in plan {plan}"));
        }
        // Each frame is an arm of the construct its parent is at: the
        // outermost is the top-level plan, or the part's.
        let fits = match frames.last() {
            None => match part_plan {
                None => plan == 0 && arm == Arm::Top,
                Some(p) => plan == p && arm == Arm::Part,
            },
            Some(parent) => match plans[parent.plan].get(parent.pos) {
                Some(&Op::Branch {
                    ref arms, is_loop, ..
                }) => {
                    arms.contains(&plan)
                        && match arm {
                            Arm::Branch => !is_loop,
                            Arm::LoopBody => is_loop && plan == arms[0],
                            Arm::LoopExit => is_loop && plan == arms[1],
                            Arm::Top | Arm::Part => false,
                        }
                }
                _ => false,
            },
        };
        if !fits {
            return Err(format!("lifeline {l}: frames that no run reaches"));
        }
        frames.push(Frame { plan, pos, arm });
    }
    // Telling a decision happens only at a construct the lifeline owns, to
    // at most the lifelines it tells.
    let at = frames.last().and_then(|f| plans[f.plan].get(f.pos));
    if let Some((_, told)) = c.telling {
        let fits = matches!(at, Some(Op::Branch { role: Role::Owner(notify), .. })
            if told as usize <= notify.len());
        if !fits {
            return Err(format!("lifeline {l}: a decision told where none is made"));
        }
    }
    let mut parts = Vec::with_capacity(c.parts.len());
    if !c.parts.is_empty() {
        let Some(Op::Par { parts: arms, .. }) = at else {
            return Err(format!("lifeline {l}: parts outside a `par`"));
        };
        if c.parts.len() != arms.len() {
            return Err(format!("lifeline {l}: another number of parts"));
        }
        for ((lane, p), &(arm_lane, arm_plan)) in c.parts.iter().zip(arms) {
            if *lane != arm_lane {
                return Err(format!("lifeline {l}: a part of another branch"));
            }
            parts.push((
                *lane,
                restore_cursor(plans, l, p, Some(arm_plan), depth + 1)?,
            ));
        }
    }
    Ok(Cursor {
        frames,
        head: match c.telling {
            None => Head::Before,
            Some((d, told)) => Head::Telling {
                d,
                told: told as usize,
            },
        },
        seen: c.seen as usize,
        parts,
    })
}
