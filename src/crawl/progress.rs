//! The progress line on a terminal.

use super::*;

/// Progress: an indicatif bar on a terminal, else a log line every 5 s.
pub(super) struct Progress {
    bar: Option<indicatif::ProgressBar>,
    started: std::time::Instant,
    last_log: parking_lot::Mutex<std::time::Instant>,
}

impl Progress {
    pub(super) fn new(enabled: bool, max_pages: u64) -> Self {
        use std::io::IsTerminal;
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = if max_pages > 0 {
                indicatif::ProgressBar::new(max_pages)
            } else {
                indicatif::ProgressBar::no_length()
            };
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {pos} pages {per_sec} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            bar
        });
        Progress {
            bar,
            started: std::time::Instant::now(),
            last_log: parking_lot::Mutex::new(std::time::Instant::now()),
        }
    }

    pub(super) fn tick(&self, shared: &Shared) {
        let recorded = shared.recorded.load(Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            if bar.position() != recorded {
                bar.set_position(recorded);
                bar.set_message(format!(
                    "queued {} in flight {}",
                    shared.frontier.len(),
                    shared.in_flight.load(Ordering::Relaxed)
                ));
            }
            return;
        }
        let mut last = self.last_log.lock();
        if last.elapsed() >= Duration::from_secs(5) {
            *last = std::time::Instant::now();
            let secs = self.started.elapsed().as_secs_f64().max(1e-3);
            tracing::info!(
                "{recorded} pages ({:.0}/s), {} queued, {} in flight",
                recorded as f64 / secs,
                shared.frontier.len(),
                shared.in_flight.load(Ordering::Relaxed)
            );
        }
    }

    pub(super) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
