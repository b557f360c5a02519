//! The controller's work queue: client-go's delaying work queue, the one kube-controller-manager's
//! HPA controller runs on. Keys wait until they are due, then line up **first in, first out**; a
//! key is in the line at most once; a key being reconciled is not handed to a second worker, and
//! an add while it runs puts it back in line when its reconcile is done; of two delays booked for
//! one key the sooner holds.
//!
//! Why not kube-runtime's scheduler: when every worker is busy it parks due keys in a hash set and
//! hands them out in hash order, so under saturation a few keys wait many sync periods while the
//! rest stay on time (at 5,000 HPAs the reference's p50 lateness was +0.2 s, its max +43 s); and
//! it polls every reconcile on the one task that drives the controller's stream. Here due keys are
//! served in the order they became due, each worker is its own task, and a queue that is behind
//! makes every key late alike, as upstream's does.
//!
//! One idle worker at a time sleeps until the next booked key is due (client-go's one waiting
//! loop); the others wait to be handed a key. When every idle worker slept until the same time,
//! each due key woke all of them and all but one armed a timer again, which woke the runtime's
//! I/O driver through its eventfd: 1.3 such writes per reconcile at KCM's five workers, 0.5 now
//! (measured at 1,000 HPAs: no CPU difference beyond the noise; issue 36).
//!
//! [`WorkQueue::coalescing`] (`--reconcile-coalescing`, off by default) puts booked keys on a grid:
//! each falls due at the grid's next time at or after its own, so keys booked close together are
//! handed out together and the workers' requests are in flight at once (fewer wake-ups of the
//! process; ~10 % less CPU at 1,000 HPAs with a 20 or 50 ms step, each key up to a step late).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// A delaying FIFO work queue of keys (see the module's documentation).
#[derive(Default)]
pub struct WorkQueue {
    inner: Mutex<Inner>,
    wake: Notify,
    broadcasts: std::sync::atomic::AtomicU64,
    timers: std::sync::atomic::AtomicU64,
    /// Booked keys fall due on a grid of this step (zero: each at its own time).
    coalesce: Option<(Instant, Duration)>,
}

#[derive(Default)]
struct Inner {
    /// Due keys, in the order they became due.
    line: VecDeque<(String, Instant)>,
    /// Keys in `line`, or waiting to go back in line when their reconcile ends (client-go's
    /// dirty set).
    dirty: HashSet<String>,
    /// When each dirty key became due (for the time it waited in line).
    dirty_since: HashMap<String, Instant>,
    /// Keys a worker holds.
    processing: HashSet<String>,
    /// Delayed adds: `(due, sequence, key)`; an entry whose time is not `waiting[key]` is stale.
    heap: BinaryHeap<Reverse<(Instant, u64, String)>>,
    /// The time each delayed key is due (the sooner of the delays booked for it).
    waiting: HashMap<String, Instant>,
    sequence: u64,
    shut: bool,
    /// An idle worker sleeps until the next booked key is due (at most one does).
    timer_held: bool,
}

/// A key handed to a worker, and how long it waited in line after it was due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The key.
    pub key: String,
    /// From when it became due until a worker took it.
    pub waited: Duration,
}

impl Inner {
    fn add(&mut self, key: &str, now: Instant) -> bool {
        if !self.dirty.insert(key.to_string()) {
            return false;
        }
        self.dirty_since.insert(key.to_string(), now);
        if self.processing.contains(key) {
            return false;
        }
        self.line.push_back((key.to_string(), now));
        true
    }

    /// Moves the delayed keys due at `now` into line, in the order they fell due.
    fn promote(&mut self, now: Instant) -> bool {
        let mut any = false;
        while let Some(Reverse((at, _, _))) = self.heap.peek()
            && *at <= now
        {
            let Some(Reverse((at, _, key))) = self.heap.pop() else {
                break;
            };
            if self.waiting.get(&key) == Some(&at) {
                self.waiting.remove(&key);
                any |= self.add(&key, at);
            }
        }
        any
    }

    fn next_due(&mut self) -> Option<Instant> {
        while let Some(Reverse((at, _, key))) = self.heap.peek() {
            if self.waiting.get(key) == Some(at) {
                return Some(*at);
            }
            self.heap.pop();
        }
        None
    }
}

impl WorkQueue {
    /// An empty queue.
    pub fn new() -> WorkQueue {
        WorkQueue::default()
    }

    /// An empty queue whose booked keys fall due together on a grid of `step`: each is taken at
    /// the first grid time at or after its own, so the workers' requests are in flight together.
    pub fn coalescing(step: Duration) -> WorkQueue {
        WorkQueue {
            coalesce: (!step.is_zero()).then(|| (Instant::now(), step)),
            ..WorkQueue::default()
        }
    }

    /// `t` moved to the grid: to its last time at or before `t`, or with `up` its next time at
    /// or after it (`t` itself without a grid).
    fn on_grid(&self, t: Instant, up: bool) -> Instant {
        let Some((base, step)) = self.coalesce else {
            return t;
        };
        let since = t.saturating_duration_since(base).as_nanos();
        let step_ns = step.as_nanos().max(1);
        let steps = if up {
            since.div_ceil(step_ns)
        } else {
            since / step_ns
        };
        base + Duration::from_nanos(u64::try_from(steps * step_ns).unwrap_or(u64::MAX))
    }

    /// Puts `key` in line now (nothing if it is in line already).
    pub fn add(&self, key: &str) {
        let added = match self.inner.lock() {
            Ok(mut q) if !q.shut => q.add(key, Instant::now()),
            _ => false,
        };
        if added {
            self.wake.notify_one();
        }
    }

    /// Puts `key` in line after `delay`; an earlier delay already booked for it holds.
    pub fn add_after(&self, key: &str, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let at = Instant::now() + delay;
        let sooner = match self.inner.lock() {
            Ok(mut q) => {
                if q.shut || q.waiting.get(key).is_some_and(|&booked| booked <= at) {
                    return;
                }
                // Idle workers sleep until the earliest booked time (or, with none, until woken).
                let earliest = q.next_due();
                q.waiting.insert(key.to_string(), at);
                q.sequence += 1;
                let sequence = q.sequence;
                q.heap.push(Reverse((at, sequence, key.to_string())));
                earliest.is_none_or(|e| at < e)
            }
            Err(_) => return,
        };
        // A worker asleep until a later time must look at the new one; one asleep until an
        // earlier or equal time finds it when it wakes. (Waking every idle worker at each booking
        // — ~330 a second at 5,000 HPAs, each booking a period ahead — re-locked the queue for
        // nothing, issue 36.)
        if sooner {
            self.broadcasts
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.wake.notify_waiters();
        }
    }

    /// How often [`WorkQueue::add_after`] woke every idle worker (a booking sooner than any).
    pub fn broadcasts(&self) -> u64 {
        self.broadcasts.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The next due key, first in first out; waits for one. `None` once the queue is shut down.
    /// The caller calls [`WorkQueue::done`] with the key when its reconcile ends.
    pub async fn take(&self) -> Option<Taken> {
        let mut held: Option<TimerHold<'_>> = None;
        loop {
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let sleep_until = {
                let mut q = self.inner.lock().ok()?;
                if let Some(h) = held.take() {
                    h.release(&mut q);
                }
                if q.shut {
                    return None;
                }
                let now = Instant::now();
                // Keys booked up to the grid's last time are due (each key at its grid time).
                q.promote(self.on_grid(now, false));
                if let Some((key, _)) = q.line.pop_front() {
                    q.dirty.remove(&key);
                    let since = q.dirty_since.remove(&key).unwrap_or(now);
                    q.processing.insert(key.clone());
                    // Pass the wake-up on to an idle worker: for the next key in line, or to
                    // sleep until the next booked one when no one else does.
                    let pass = !q.line.is_empty() || (!q.timer_held && q.next_due().is_some());
                    drop(q);
                    if pass {
                        self.wake.notify_one();
                    }
                    return Some(Taken {
                        key,
                        waited: now.saturating_duration_since(since),
                    });
                }
                match q.next_due() {
                    Some(at) if !q.timer_held => {
                        q.timer_held = true;
                        held = Some(TimerHold {
                            queue: self,
                            held: true,
                        });
                        Some(self.on_grid(at, true))
                    }
                    _ => None,
                }
            };
            match sleep_until {
                Some(at) => {
                    self.timers
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tokio::select! {
                        _ = &mut woken => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                None => woken.await,
            }
        }
    }

    /// How many times an idle worker went to sleep until a booked key was due.
    pub fn timers(&self) -> u64 {
        self.timers.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A worker is done with `key`: if it was added meanwhile, it goes back in line.
    pub fn done(&self, key: &str) {
        let back = match self.inner.lock() {
            Ok(mut q) => {
                q.processing.remove(key);
                if q.dirty.contains(key) && !q.shut {
                    let since = q.dirty_since.get(key).copied().unwrap_or_else(Instant::now);
                    q.line.push_back((key.to_string(), since));
                    true
                } else {
                    false
                }
            }
            Err(_) => false,
        };
        if back {
            self.wake.notify_one();
        }
    }

    /// Drops whatever is booked for `key` (a deleted HPA); a reconcile of it in progress ends
    /// normally.
    pub fn forget(&self, key: &str) {
        if let Ok(mut q) = self.inner.lock() {
            q.waiting.remove(key);
            if q.dirty.remove(key) {
                q.dirty_since.remove(key);
                q.line.retain(|(k, _)| k != key);
            }
        }
    }

    /// Keys in line (due, not yet taken): client-go's `workqueue_depth`.
    pub fn depth(&self) -> usize {
        self.inner.lock().map(|q| q.line.len()).unwrap_or(0)
    }

    /// Stops handing out keys: every [`WorkQueue::take`] returns `None` from now on.
    pub fn shut_down(&self) {
        if let Ok(mut q) = self.inner.lock() {
            q.shut = true;
        }
        self.wake.notify_waiters();
    }
}

/// The timer a worker holds in [`WorkQueue::take`]. Released when the worker looks at the queue
/// again; dropped with an abandoned `take`, it lets another idle worker take the timer over.
struct TimerHold<'a> {
    queue: &'a WorkQueue,
    held: bool,
}

impl TimerHold<'_> {
    /// The holder is back at the queue (its lock held): it decides again.
    fn release(mut self, q: &mut Inner) {
        q.timer_held = false;
        self.held = false;
    }
}

impl Drop for TimerHold<'_> {
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        if let Ok(mut q) = self.queue.inner.lock() {
            q.timer_held = false;
        }
        self.queue.wake.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    async fn key(q: &WorkQueue) -> String {
        q.take().await.expect("a key").key
    }

    #[tokio::test(start_paused = true)]
    async fn due_keys_come_first_in_first_out() {
        let q = WorkQueue::new();
        q.add_after("c", Duration::from_secs(3));
        q.add_after("a", Duration::from_secs(1));
        q.add_after("b", Duration::from_secs(2));
        q.add("now");
        tokio::time::sleep(Duration::from_secs(5)).await;
        // All four are due; they come in the order they fell due, not in the order of a hash.
        let order = [key(&q).await, key(&q).await, key(&q).await, key(&q).await];
        assert_eq!(order, ["now", "a", "b", "c"]);
    }

    #[tokio::test(start_paused = true)]
    async fn take_waits_until_the_key_is_due() {
        let q = WorkQueue::new();
        let start = Instant::now();
        q.add_after("a", Duration::from_secs(15));
        let taken = q.take().await.unwrap();
        assert_eq!(taken.key, "a");
        assert_eq!(start.elapsed(), Duration::from_secs(15));
        assert_eq!(taken.waited, Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn the_sooner_of_two_delays_holds() {
        let q = WorkQueue::new();
        let start = Instant::now();
        q.add_after("a", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(4));
        q.add_after("a", Duration::from_secs(8));
        assert_eq!(key(&q).await, "a");
        assert_eq!(start.elapsed(), Duration::from_secs(4));
        q.done("a");
        // The later bookings were dropped with the sooner one: nothing else comes.
        let more = tokio::time::timeout(Duration::from_secs(60), q.take()).await;
        assert!(more.is_err(), "a dropped booking came back: {more:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_in_line_is_there_once() {
        let q = WorkQueue::new();
        q.add("a");
        q.add("a");
        q.add_after("a", Duration::from_millis(1));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(q.depth(), 1);
        assert_eq!(key(&q).await, "a");
        q.done("a");
        assert_eq!(q.depth(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_added_while_processing_comes_back_after_done() {
        let q = WorkQueue::new();
        q.add("a");
        assert_eq!(key(&q).await, "a");
        q.add("a");
        q.add("b");
        // "a" is being reconciled: not handed to a second worker.
        assert_eq!(key(&q).await, "b");
        let second = tokio::time::timeout(Duration::from_secs(1), q.take()).await;
        assert!(second.is_err(), "a key was handed out twice at once");
        q.done("a");
        assert_eq!(key(&q).await, "a");
    }

    #[tokio::test(start_paused = true)]
    async fn waited_is_the_time_in_line_after_due() {
        let q = WorkQueue::new();
        q.add_after("a", Duration::from_secs(2));
        tokio::time::sleep(Duration::from_secs(7)).await;
        let taken = q.take().await.unwrap();
        assert_eq!(taken.waited, Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn forgotten_keys_are_not_handed_out() {
        let q = WorkQueue::new();
        q.add("a");
        q.add_after("b", Duration::from_secs(1));
        q.add("c");
        q.forget("a");
        q.forget("b");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(key(&q).await, "c");
        assert_eq!(q.depth(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_sooner_booking_wakes_a_sleeping_worker() {
        let q = Arc::new(WorkQueue::new());
        q.add_after("late", Duration::from_secs(60));
        let start = Instant::now();
        let worker = tokio::spawn({
            let q = q.clone();
            async move { q.take().await.map(|t| t.key) }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        q.add_after("soon", Duration::from_secs(1));
        assert_eq!(worker.await.unwrap().as_deref(), Some("soon"));
        assert_eq!(start.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_later_booking_wakes_no_one_and_is_still_served() {
        let q = Arc::new(WorkQueue::new());
        q.add_after("first", Duration::from_secs(5));
        assert_eq!(
            q.broadcasts(),
            1,
            "nothing was booked: idle workers must look"
        );
        let start = Instant::now();
        let worker = tokio::spawn({
            let q = q.clone();
            async move {
                let mut got = Vec::new();
                for _ in 0..2 {
                    let t = q.take().await.expect("a key");
                    got.push((t.key.clone(), Instant::now()));
                    q.done(&t.key);
                }
                got
            }
        });
        tokio::task::yield_now().await;
        q.add_after("second", Duration::from_secs(10));
        q.add_after("first-again", Duration::from_secs(5));
        assert_eq!(q.broadcasts(), 1, "later (and equal) bookings wake no one");
        let got = worker.await.unwrap();
        assert_eq!(
            got[0],
            ("first".to_string(), start + Duration::from_secs(5))
        );
        assert_eq!(got[1].0, "first-again");
        assert_eq!(got[1].1, start + Duration::from_secs(5));
        assert_eq!(q.take().await.map(|t| t.key).as_deref(), Some("second"));
        assert_eq!(start.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn every_worker_gets_a_key_when_many_are_due() {
        let q = Arc::new(WorkQueue::new());
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move { q.take().await.map(|t| t.key) })
            })
            .collect();
        tokio::task::yield_now().await;
        for k in ["a", "b", "c", "d"] {
            q.add_after(k, Duration::from_secs(1));
        }
        let mut got = Vec::new();
        for w in workers {
            got.push(w.await.unwrap().unwrap());
        }
        got.sort();
        assert_eq!(got, ["a", "b", "c", "d"]);
    }

    /// What a worker took: the key, when, and how long it had waited in line.
    type Took = (String, Instant, Duration);

    /// `n` workers taking keys from `q`, each working `work` on a key.
    fn workers(
        q: &Arc<WorkQueue>,
        n: usize,
        work: Duration,
    ) -> Vec<tokio::task::JoinHandle<Vec<Took>>> {
        (0..n)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    while let Some(t) = q.take().await {
                        got.push((t.key.clone(), Instant::now(), t.waited));
                        tokio::time::sleep(work).await;
                        q.done(&t.key);
                    }
                    got
                })
            })
            .collect()
    }

    /// Shuts `q` down and gathers what its workers took, in the numeric order of the keys.
    async fn stop(q: &WorkQueue, workers: Vec<tokio::task::JoinHandle<Vec<Took>>>) -> Vec<Took> {
        q.shut_down();
        let mut got = Vec::new();
        for w in workers {
            got.extend(w.await.unwrap());
        }
        got.sort_by_key(|(k, _, _)| k.parse::<u64>().unwrap());
        got
    }

    /// Five idle workers, a hundred keys booked 10 ms apart: each is taken when due, and one
    /// worker at a time sleeps until the next (five timers per key when every worker slept).
    #[tokio::test(start_paused = true)]
    async fn one_idle_worker_sleeps_until_the_next_booking() {
        let q = Arc::new(WorkQueue::new());
        let start = Instant::now();
        let workers = workers(&q, 5, Duration::from_millis(3));
        tokio::task::yield_now().await;
        for i in 0..100u64 {
            q.add_after(&i.to_string(), Duration::from_millis(1000 + 10 * i));
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        let got = stop(&q, workers).await;
        assert_eq!(got.len(), 100);
        for (i, (key, at, waited)) in got.iter().enumerate() {
            assert_eq!(key, &i.to_string());
            assert_eq!(
                *at,
                start + Duration::from_millis(1000 + 10 * i as u64),
                "{key}"
            );
            assert_eq!(*waited, Duration::ZERO, "{key}");
        }
        assert!(q.timers() <= 101, "{} timers for 100 bookings", q.timers());
    }

    /// On a grid of 20 ms, keys booked 3 ms apart are taken together at the grid's next time at
    /// or after each one's own, as many at once as there are idle workers; one due while every
    /// worker is busy is taken as soon as one is done.
    #[tokio::test(start_paused = true)]
    async fn coalescing_hands_keys_out_together_on_its_grid() {
        let q = Arc::new(WorkQueue::coalescing(Duration::from_millis(20)));
        let start = Instant::now();
        let workers = workers(&q, 5, Duration::from_millis(1));
        tokio::task::yield_now().await;
        for i in 0..10u64 {
            q.add_after(&i.to_string(), Duration::from_millis(1000 + 3 * i));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let got = stop(&q, workers).await;
        // Due at 1000, 1003, …, 1027 ms: 1000 is on the grid; 1003–1018 wait for 1020, where five
        // workers take five and the sixth goes when the first is done (1 ms of work); 1021–1027
        // wait for 1040.
        let taken_at = [1000, 1020, 1020, 1020, 1020, 1020, 1021, 1040, 1040, 1040];
        assert_eq!(got.len(), 10);
        for (i, (key, at, waited)) in got.iter().enumerate() {
            assert_eq!(key, &i.to_string());
            assert_eq!(*at, start + Duration::from_millis(taken_at[i]), "{key}");
            assert_eq!(
                *waited,
                Duration::from_millis(taken_at[i] - (1000 + 3 * i as u64)),
                "{key}"
            );
        }
        assert!(q.timers() <= 4, "{} timers for 3 grid times", q.timers());
    }

    /// A `take` abandoned while it sleeps for the queue (a worker cancelled) lets another idle
    /// worker sleep until the booked key instead.
    #[tokio::test(start_paused = true)]
    async fn an_abandoned_take_hands_its_timer_on() {
        let q = Arc::new(WorkQueue::new());
        let start = Instant::now();
        q.add_after("a", Duration::from_secs(5));
        let holder = tokio::spawn({
            let q = q.clone();
            async move { q.take().await }
        });
        tokio::task::yield_now().await;
        let other = tokio::spawn({
            let q = q.clone();
            async move { q.take().await.map(|t| t.key) }
        });
        tokio::task::yield_now().await;
        assert_eq!(q.timers(), 1, "the second worker waits without a timer");
        holder.abort();
        assert!(holder.await.unwrap_err().is_cancelled());
        let got = tokio::time::timeout(Duration::from_secs(60), other).await;
        assert_eq!(
            got.expect("no worker took the key over")
                .unwrap()
                .as_deref(),
            Some("a")
        );
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_ends_every_take() {
        let q = Arc::new(WorkQueue::new());
        let worker = tokio::spawn({
            let q = q.clone();
            async move { q.take().await }
        });
        tokio::task::yield_now().await;
        q.shut_down();
        assert_eq!(worker.await.unwrap(), None);
        q.add("a");
        assert_eq!(q.take().await, None);
    }
}

/// Saturation: 5,000 keys, 5 workers, 10 ms per key, a 15 s period — every key keeps its period
/// (kube-runtime's scheduler served some keys every period and starved others).
#[cfg(test)]
mod load {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(start_paused = true)]
    async fn many_keys_keep_their_period() {
        let q = Arc::new(WorkQueue::new());
        let n = 5000;
        let counts: Arc<Vec<AtomicUsize>> = Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect());
        for i in 0..n {
            q.add(&i.to_string());
        }
        let mut workers = Vec::new();
        for _ in 0..5 {
            let (q, counts) = (q.clone(), counts.clone());
            workers.push(tokio::spawn(async move {
                while let Some(t) = q.take().await {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    counts[t.key.parse::<usize>().unwrap()].fetch_add(1, Ordering::Relaxed);
                    q.done(&t.key);
                    q.add_after(&t.key, Duration::from_secs(15));
                }
            }));
        }
        tokio::time::sleep(Duration::from_secs(61)).await;
        q.shut_down();
        let c: Vec<usize> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let (min, max) = (c.iter().min().unwrap(), c.iter().max().unwrap());
        // Due at 0, 15, 30, 45 and 60 s: five reconciles each, the last one for some still in
        // line at 61 s (5,000 keys take 10 s of 5 workers).
        assert!(*min >= 4 && *max <= 5, "min {min} max {max}");
        // ~20,000 bookings, each a period ahead of every earlier one: idle workers were woken
        // for the first only.
        assert!(q.broadcasts() <= 2, "{} broadcasts", q.broadcasts());
    }
}
