//! The analysis threads (pipeline: between fetch and decide): a fixed set
//! of named OS threads that run page analyses from one queue.
//!
//! A worker that finds the queue empty sleeps on a condition variable at
//! once. A crawl hands this pool one page at a time, a few hundred a
//! second, so its threads are idle most of the time and wake once per page:
//! a work-stealing pool such as rayon's spins and yields dozens of times
//! each time it runs out of work before it sleeps. In perf profiles of the
//! real-web crawl, rayon's waiting took 2.7% of the CPU samples and this
//! pool's takes 0.65% (docs/benchmarks.md, "Real documentation pages").

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The queue and whether the pool is still open.
struct Queue {
    jobs: VecDeque<Job>,
    open: bool,
    /// Threads waiting on `ready` (a job is announced only when one is).
    idle: usize,
}

struct Inner {
    queue: Mutex<Queue>,
    ready: Condvar,
}

/// A fixed number of threads running the jobs given to [`Pool::spawn`] in
/// the order given. Dropping the pool lets its threads finish the jobs
/// queued, then end (it does not wait for them).
pub(super) struct Pool {
    inner: Arc<Inner>,
}

impl Pool {
    /// `threads` threads (at least one), named `name(i)`.
    pub(super) fn new(threads: usize, name: impl Fn(usize) -> String) -> std::io::Result<Pool> {
        let inner = Arc::new(Inner {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                open: true,
                idle: 0,
            }),
            ready: Condvar::new(),
        });
        for i in 0..threads.max(1) {
            let inner = inner.clone();
            std::thread::Builder::new().name(name(i)).spawn(move || run(&inner))?;
        }
        Ok(Pool { inner })
    }

    /// Queues `job` for the next free thread.
    pub(super) fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        let mut q = self.inner.queue.lock();
        q.jobs.push_back(Box::new(job));
        let wake = q.idle > 0;
        drop(q);
        if wake {
            self.inner.ready.notify_one();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.inner.queue.lock().open = false;
        self.inner.ready.notify_all();
    }
}

/// One thread's loop: the next job, or sleep until there is one; ends once
/// the pool is dropped and its queue is empty. A job that panics ends
/// itself only (the crawl's jobs catch their own panics, and record them as
/// the page's failure).
fn run(inner: &Inner) {
    loop {
        let job = {
            let mut q = inner.queue.lock();
            loop {
                if let Some(job) = q.jobs.pop_front() {
                    break job;
                }
                if !q.open {
                    return;
                }
                q.idle += 1;
                inner.ready.wait(&mut q);
                q.idle -= 1;
            }
        };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn runs_every_job_on_its_threads() {
        let pool = Pool::new(3, |i| format!("pool-test-{i}")).unwrap();
        let (tx, rx) = mpsc::channel();
        for n in 0..1000 {
            let tx = tx.clone();
            pool.spawn(move || {
                let name = std::thread::current().name().map(String::from);
                tx.send((n, name)).unwrap();
            });
        }
        let mut got: Vec<(usize, Option<String>)> = (0..1000)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        got.sort();
        assert!(got.iter().enumerate().all(|(i, (n, _))| i == *n));
        assert!(got
            .iter()
            .all(|(_, name)| name.as_deref().is_some_and(|s| s.starts_with("pool-test-"))));
    }

    #[test]
    fn a_panicking_job_leaves_the_thread_running() {
        let pool = Pool::new(1, |_| "pool-panic".into()).unwrap();
        pool.spawn(|| panic!("job failed"));
        let (tx, rx) = mpsc::channel();
        pool.spawn(move || tx.send(7).unwrap());
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 7);
    }

    #[test]
    fn dropping_the_pool_finishes_the_queued_jobs() {
        let done = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        {
            let pool = Pool::new(2, |i| format!("pool-drop-{i}")).unwrap();
            for _ in 0..200 {
                let (done, tx) = (done.clone(), tx.clone());
                pool.spawn(move || {
                    std::thread::sleep(Duration::from_micros(50));
                    if done.fetch_add(1, Ordering::SeqCst) == 199 {
                        tx.send(()).unwrap();
                    }
                });
            }
        }
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(done.load(Ordering::SeqCst), 200);
    }
}
