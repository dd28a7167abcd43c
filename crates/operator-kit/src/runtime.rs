//! The reconcile loop: one key, like library-go's controllers — every watch event, timer and
//! retry collapses into "reconcile the operator's CR once more".
//!
//! An operator has one root object, so the kube-rs `Controller`'s per-object scheduling buys
//! nothing here, while this loop shares the apply engine's watch caches instead of opening
//! its own watches. Reconciles run only while this process leads; a failed reconcile retries
//! with exponential backoff; a quiet cluster costs one in-memory reconcile per resync period
//! and no API request.
//!
//! Fencing: a reconcile in flight is cancelled (its future dropped, so no further request of
//! it is sent, not even a retry after a 409) the moment leadership is lost or shutdown is
//! asked, and every reconcile has a deadline, so a stalled API server cannot hold the loop,
//! and with it the lease release on SIGTERM, indefinitely.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// How a reconcile ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything converged; run again on the next change, resync, or after this long.
    Done { requeue_after: Option<Duration> },
    /// Some step failed; retry after the failure backoff, which doubles with each failure in
    /// a row. `requeue_after` does not shorten it: a step that asks to look again in a second
    /// while the API server refuses every write (a 409 storm) would otherwise have the whole
    /// reconcile, every object and status write in it, sent again every second for as long
    /// as the refusals last. A watch event still starts a reconcile at once.
    Failed { requeue_after: Option<Duration> },
}

/// How long one reconcile may run before it is cancelled ([`LoopOptions::deadline`]): well
/// above a healthy reconcile (milliseconds) plus an OpenStack timeout, well below the 10
/// minutes after which `/healthz` calls the loop stuck.
pub const RECONCILE_DEADLINE: Duration = Duration::from_secs(180);

/// Timing of the loop.
#[derive(Debug, Clone, Copy)]
pub struct LoopOptions {
    /// A reconcile at least this often even without events (library-go resyncs every minute).
    pub resync: Duration,
    /// Waits this long after a change before reconciling, so a burst of events (our own
    /// writes echoing back) costs one reconcile.
    pub debounce: Duration,
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    /// A reconcile still running after this long is cancelled and counts as failed.
    pub deadline: Duration,
}

impl Default for LoopOptions {
    fn default() -> Self {
        Self {
            resync: Duration::from_secs(60),
            debounce: Duration::from_millis(5),
            min_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(300),
            deadline: RECONCILE_DEADLINE,
        }
    }
}

/// Runs `reconcile` until `shutdown` flips to true. `changes` is bumped whenever watched
/// state changes; `leading` says whether this process may write.
pub async fn run<F, Fut>(
    options: LoopOptions,
    mut changes: watch::Receiver<u64>,
    mut leading: watch::Receiver<bool>,
    mut shutdown: watch::Receiver<bool>,
    mut reconcile: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Outcome>,
{
    let mut backoff = options.min_backoff;
    let mut next = Instant::now();
    loop {
        if *shutdown.borrow() {
            return;
        }
        if *leading.borrow() {
            tokio::select! {
                _ = tokio::time::sleep_until(next) => {}
                r = changes.changed() => {
                    if r.is_err() { return; }
                    tokio::time::sleep(options.debounce).await;
                }
                _ = shutdown.changed() => return,
                _ = leading.changed() => continue,
            }
            changes.borrow_and_update();
            let outcome = tokio::select! {
                biased;
                // `wait_for`'s guard is not Send; it is dropped inside each branch future.
                () = async { let _ = shutdown.wait_for(|stop| *stop).await; } => {
                    tracing::info!("shutting down: the reconcile in flight is cancelled");
                    return;
                }
                () = async { let _ = leading.wait_for(|lead| !*lead).await; } => {
                    tracing::warn!("leadership lost: the reconcile in flight is cancelled");
                    continue;
                }
                done = tokio::time::timeout(options.deadline, reconcile()) => match done {
                    Ok(outcome) => outcome,
                    Err(_) => {
                        tracing::warn!(
                            deadline_s = options.deadline.as_secs(),
                            "a reconcile ran past its deadline and was cancelled"
                        );
                        Outcome::Failed { requeue_after: None }
                    }
                },
            };
            let now = Instant::now();
            next = match outcome {
                Outcome::Done { requeue_after } => {
                    backoff = options.min_backoff;
                    now + requeue_after.map_or(options.resync, |r| r.min(options.resync))
                }
                Outcome::Failed { .. } => {
                    let wait = backoff;
                    backoff = (backoff * 2).min(options.max_backoff);
                    now + wait
                }
            };
        } else {
            tokio::select! {
                r = leading.changed() => if r.is_err() { return },
                _ = shutdown.changed() => return,
            }
            // Just became leader: reconcile at once.
            next = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn opts() -> LoopOptions {
        LoopOptions {
            resync: Duration::from_secs(3600),
            debounce: Duration::from_millis(1),
            min_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(40),
            deadline: Duration::from_secs(3600),
        }
    }

    /// A leading loop whose reconcile "writes" once, stalls for `stall` (a slow API server),
    /// then "writes" again; the counters hold the reconciles started and the writes made.
    struct SlowWriter {
        lead: watch::Sender<bool>,
        stop: watch::Sender<bool>,
        started: Arc<AtomicUsize>,
        writes: Arc<AtomicUsize>,
        task: tokio::task::JoinHandle<()>,
        _changes: watch::Sender<u64>,
    }

    fn slow_writer(options: LoopOptions, stall: Duration) -> SlowWriter {
        let (changes, change_rx) = watch::channel(0u64);
        let (lead, lead_rx) = watch::channel(true);
        let (stop, stop_rx) = watch::channel(false);
        let (started, writes) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (s, w) = (started.clone(), writes.clone());
        let task = tokio::spawn(run(options, change_rx, lead_rx, stop_rx, move || {
            let (s, w) = (s.clone(), w.clone());
            async move {
                s.fetch_add(1, Ordering::SeqCst);
                w.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(stall).await;
                w.fetch_add(1, Ordering::SeqCst);
                Outcome::Done {
                    requeue_after: None,
                }
            }
        }));
        SlowWriter {
            lead,
            stop,
            started,
            writes,
            task,
            _changes: changes,
        }
    }

    #[tokio::test]
    async fn losing_the_lease_cancels_the_reconcile_in_flight() {
        let l = slow_writer(opts(), Duration::from_millis(300));
        wait_for(&l.started, 1).await;
        l.lead.send_replace(false);
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(
            l.writes.load(Ordering::SeqCst),
            1,
            "no write after leadership was lost"
        );
        assert_eq!(
            l.started.load(Ordering::SeqCst),
            1,
            "a follower never starts one"
        );
        l.stop.send_replace(true);
        l.task.await.expect("loop ends on shutdown");
    }

    #[tokio::test]
    async fn shutdown_cancels_the_reconcile_in_flight_and_returns_at_once() {
        let l = slow_writer(opts(), Duration::from_secs(3600));
        wait_for(&l.started, 1).await;
        l.stop.send_replace(true);
        tokio::time::timeout(Duration::from_secs(5), l.task)
            .await
            .expect("the loop returns without waiting for the stalled reconcile")
            .expect("no panic");
        assert_eq!(l.writes.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_reconcile_past_its_deadline_is_cancelled_and_retried() {
        let options = LoopOptions {
            deadline: Duration::from_millis(50),
            ..opts()
        };
        let l = slow_writer(options, Duration::from_secs(3600));
        wait_for(&l.started, 3).await;
        assert_eq!(
            l.writes.load(Ordering::SeqCst),
            l.started.load(Ordering::SeqCst),
            "each attempt was cut before its second write"
        );
        l.stop.send_replace(true);
        l.task.await.expect("loop ends on shutdown");
    }

    #[tokio::test]
    async fn reconciles_on_start_on_change_and_not_while_following() {
        let (change_tx, change_rx) = watch::channel(0u64);
        let (lead_tx, lead_rx) = watch::channel(false);
        let (stop_tx, stop_rx) = watch::channel(false);
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let task = tokio::spawn(run(opts(), change_rx, lead_rx, stop_rx, move || {
            let c = c.clone();
            async move {
                c.fetch_add(1, Ordering::SeqCst);
                Outcome::Done {
                    requeue_after: None,
                }
            }
        }));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            count.load(Ordering::SeqCst),
            0,
            "a follower never reconciles"
        );
        lead_tx.send_replace(true);
        wait_for(&count, 1).await;
        change_tx.send_modify(|n| *n += 1);
        wait_for(&count, 2).await;
        stop_tx.send_replace(true);
        task.await.expect("loop ends on shutdown");
    }

    #[tokio::test]
    async fn failures_retry_with_backoff() {
        let (_change_tx, change_rx) = watch::channel(0u64);
        let (_lead_tx, lead_rx) = watch::channel(true);
        let (stop_tx, stop_rx) = watch::channel(false);
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let task = tokio::spawn(run(opts(), change_rx, lead_rx, stop_rx, move || {
            let c = c.clone();
            async move {
                c.fetch_add(1, Ordering::SeqCst);
                Outcome::Failed {
                    requeue_after: None,
                }
            }
        }));
        wait_for(&count, 4).await;
        stop_tx.send_replace(true);
        task.await.expect("loop ends on shutdown");
    }

    /// A failing reconcile whose steps ask to be run again at once (a short requeue) is still
    /// retried with a doubling backoff: over 1 s with a 10 ms first backoff, a handful of
    /// attempts, not one per millisecond. A slow machine only makes fewer.
    #[tokio::test]
    async fn a_short_requeue_does_not_undo_the_failure_backoff() {
        let (_change_tx, change_rx) = watch::channel(0u64);
        let (_lead_tx, lead_rx) = watch::channel(true);
        let (stop_tx, stop_rx) = watch::channel(false);
        let options = LoopOptions {
            max_backoff: Duration::from_secs(1),
            ..opts()
        };
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let task = tokio::spawn(run(options, change_rx, lead_rx, stop_rx, move || {
            let c = c.clone();
            async move {
                c.fetch_add(1, Ordering::SeqCst);
                Outcome::Failed {
                    requeue_after: Some(Duration::from_millis(1)),
                }
            }
        }));
        tokio::time::sleep(Duration::from_secs(1)).await;
        // Attempts at 0, 10, 30, 70, 150, 310 and 630 ms.
        let attempts = count.load(Ordering::SeqCst);
        assert!((2..=10).contains(&attempts), "{attempts} attempts in 1 s");
        stop_tx.send_replace(true);
        task.await.expect("loop ends on shutdown");
    }

    async fn wait_for(count: &AtomicUsize, n: usize) {
        let until = Instant::now() + Duration::from_secs(10);
        while count.load(Ordering::SeqCst) < n {
            assert!(
                Instant::now() < until,
                "reconcile count stayed at {}",
                count.load(Ordering::SeqCst)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
