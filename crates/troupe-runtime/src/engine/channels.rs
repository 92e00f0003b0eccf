//! The run's channels: FIFO queues between lifelines (per lane), and the
//! messages sent to and fetched from the parts of a placed run elsewhere.

use super::*;

impl RunState {
    /// The index of channel `key` in `to`'s inbox list (made on first use),
    /// trying `hint` first.
    pub(super) fn inbox(&mut self, to: u32, key: ChannelKey, hint: u32) -> usize {
        let inbox = &mut self.queues[to as usize];
        if inbox.get(hint as usize).is_some_and(|i| i.key == key) {
            return hint as usize;
        }
        match inbox.iter().position(|i| i.key == key) {
            Some(i) => i,
            None => {
                inbox.push(Inbox {
                    key,
                    queue: VecDeque::new(),
                    waiter: NO_PARENT,
                    fetched: 0,
                    fetching: false,
                });
                inbox.len() - 1
            }
        }
    }

    /// `task` (of lifeline `from`) puts `msg` on the channel of lane `chan`
    /// from `from` to `to`, and wakes the task of `to` that waits for it.
    pub(super) fn push(&mut self, task: u32, to: u32, chan: u32, msg: Msg) {
        let from = self.tasks[task as usize].lane;
        if self.local.get(to as usize) == Some(&false) {
            return self.send_away(from, to, chan, msg);
        }
        let i = self.inbox(to, (from, chan), self.tasks[task as usize].hints[0]);
        self.tasks[task as usize].hints[0] = i as u32;
        let inbox = &mut self.queues[to as usize][i];
        inbox.queue.push_back(msg);
        let waiter = std::mem::replace(&mut inbox.waiter, NO_PARENT);
        if let Some(t) = self.tasks.get_mut(waiter as usize)
            && t.wait == Wait::Recv(from, chan)
        {
            t.wait = Wait::Ready;
            self.ready.push_back(waiter);
        }
    }

    /// The next message for `task` (of lifeline `to`) on the channel of
    /// lane `chan` from `from`; when there is none, the task is the
    /// channel's waiter (the caller makes it wait).
    pub(super) fn pop(&mut self, task: u32, from: u32, chan: u32) -> Option<Msg> {
        let to = self.tasks[task as usize].lane;
        let i = self.inbox(to, (from, chan), self.tasks[task as usize].hints[1]);
        self.tasks[task as usize].hints[1] = i as u32;
        let inbox = &mut self.queues[to as usize][i];
        let msg = inbox.queue.pop_front();
        if msg.is_none() {
            inbox.waiter = task;
            if self.local.get(from as usize) == Some(&false) && !inbox.fetching {
                inbox.fetching = true;
                let seq = inbox.fetched;
                self.fetch(to, (from, chan), seq);
            }
        }
        msg
    }

    /// Hands a message for a lifeline of another part to the transport,
    /// numbered on its channel.
    pub(super) fn send_away(&mut self, from: u32, to: u32, chan: u32, msg: Msg) {
        let Some(remote) = &self.remote else { return };
        let seq = self.sent.entry((to, from, chan)).or_default();
        remote.send(
            RemoteChannel {
                from: LifelineId(from),
                to: LifelineId(to),
                lane: chan,
            },
            *seq,
            &msg,
        );
        *seq += 1;
    }

    /// Asks the transport for the messages of channel `key` into `to`
    /// from number `seq` on.
    pub(super) fn fetch(&mut self, to: u32, key: ChannelKey, seq: u64) {
        let Some(remote) = &self.remote else { return };
        let channel = RemoteChannel {
            from: LifelineId(key.0),
            to: LifelineId(to),
            lane: key.1,
        };
        let got = remote.receive(channel, seq);
        self.arrivals
            .push(Box::pin(async move { (to, key, got.await) }));
    }

    /// Messages fetched from another part arrived: they join their queue,
    /// and the task waiting on it goes on.
    pub(super) fn arrive(&mut self, (to, key, got): Arrival) -> Result<(), RunError> {
        let msgs = got.map_err(|e| e.into_error(&self.options.run_id))?;
        let i = self.inbox(to, key, 0);
        let inbox = &mut self.queues[to as usize][i];
        inbox.fetching = false;
        inbox.fetched += msgs.len() as u64;
        inbox.queue.extend(msgs);
        if inbox.queue.is_empty() {
            // Nothing yet (a transport may answer empty): ask again.
            inbox.fetching = true;
            let seq = inbox.fetched;
            self.fetch(to, key, seq);
            return Ok(());
        }
        let waiter = std::mem::replace(&mut inbox.waiter, NO_PARENT);
        if let Some(t) = self.tasks.get_mut(waiter as usize)
            && t.lane == to
            && t.wait == Wait::Recv(key.0, key.1)
        {
            t.wait = Wait::Ready;
            self.ready.push_back(waiter);
        }
        Ok(())
    }
}
