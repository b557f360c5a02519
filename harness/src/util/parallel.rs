//! Parallel runs (`run --jobs N`, `fuzz --jobs N`): items are worked on by N threads, and their
//! results are handed to the caller in item order, so a report is the same whatever the number
//! of jobs. The caller may stop early (fuzzing stops at its first reproducible difference):
//! items not started yet are never started, results past the stop are dropped.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::channel;

/// The default number of jobs: the cores available to this process (1 when unknown).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Works on items `0..count` with `jobs` threads (`work(i)`), and calls `consume(i, result)` on
/// the calling thread in order of `i`. `consume` returns `false` to stop: no further item is
/// started and no further result is consumed. With `jobs` ≤ 1 everything runs on the calling
/// thread, one item after the other.
pub fn for_each_ordered<R: Send>(
    count: usize,
    jobs: usize,
    work: impl Fn(usize) -> R + Sync,
    mut consume: impl FnMut(usize, R) -> bool,
) {
    if jobs <= 1 || count <= 1 {
        for i in 0..count {
            if !consume(i, work(i)) {
                return;
            }
        }
        return;
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (tx, rx) = channel::<(usize, R)>();
        for _ in 0..jobs.min(count) {
            let tx = tx.clone();
            let (next, stop, work) = (&next, &stop, &work);
            scope.spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= count || tx.send((i, work(i))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut waiting: BTreeMap<usize, R> = BTreeMap::new();
        let mut due = 0;
        'results: for (i, r) in rx.iter() {
            waiting.insert(i, r);
            while let Some(r) = waiting.remove(&due) {
                if !consume(due, r) {
                    break 'results;
                }
                due += 1;
            }
        }
        // Stopped early (or done): workers finish the item they hold and take no other.
        stop.store(true, Ordering::SeqCst);
    });
}

/// Works on every item with `jobs` threads; the results in item order.
pub fn map_ordered<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let mut out = Vec::with_capacity(items.len());
    for_each_ordered(
        items.len(),
        jobs,
        |i| work(&items[i]),
        |_, r| {
            out.push(r);
            true
        },
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_item_order_whatever_the_jobs() {
        for jobs in [1, 2, 3, 8] {
            let items: Vec<u64> = (0..50).collect();
            // Later items finish first: the order must still be the items'.
            let out = map_ordered(&items, jobs, |&i| {
                std::thread::sleep(std::time::Duration::from_micros((50 - i) * 100));
                i * 2
            });
            assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_stop_consumes_nothing_after_it_and_starts_little_more() {
        let started = AtomicUsize::new(0);
        let mut seen = Vec::new();
        for_each_ordered(
            1000,
            4,
            |i| {
                started.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(1));
                i
            },
            |i, r| {
                seen.push(r);
                i < 9
            },
        );
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
        assert!(
            started.load(Ordering::SeqCst) < 1000,
            "items after the stop were not started"
        );
    }
}
