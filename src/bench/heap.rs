//! Live heap bytes, counted by a wrapper around the global allocator.
//!
//! Peak RSS (`VmHWM`) counts what the allocator holds from the system:
//! the live data, and the pages it keeps partly used or not yet given back.
//! To tell the two apart, a binary built with `--features heap-count`
//! installs [`Counting`] around its allocator; every allocation, free and
//! reallocation then adds or subtracts its size from a process-wide count,
//! and `simcrawl bench crawl` prints the count's peak beside the RSS
//! (docs/benchmarks.md, "Memory and disk"). A build without the feature
//! never calls [`Counting`], and [`live_heap`] returns `None`.
//!
//! Two atomic operations per allocation cost some of a crawl's CPU (`bench
//! crawl` at 20 000 pages: 0.250 and 0.254 CPU-s per 1k pages against
//! 0.247 and 0.230 without), so the default build leaves the counter out.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The allocator `A`, with every block's size counted (see the module
/// docs). Install it as the global allocator:
///
/// ```
/// #[global_allocator]
/// static GLOBAL: simcrawl::bench::Counting<std::alloc::System> = simcrawl::bench::Counting(std::alloc::System);
///
/// fn main() {
///     let v = vec![0u8; 1 << 20];
///     let heap = simcrawl::bench::live_heap().expect("counted");
///     assert!(heap.live >= v.len());
/// }
/// ```
#[derive(Debug)]
pub struct Counting<A>(pub A);

/// Bytes allocated and not yet freed through [`Counting`]: now, and the
/// most at any time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveHeap {
    /// Live bytes now.
    pub live: usize,
    /// The most live bytes so far.
    pub peak: usize,
}

/// The count of the [`Counting`] allocator, or `None` when no allocation
/// went through one (a build without `--features heap-count`).
pub fn live_heap() -> Option<LiveHeap> {
    INSTALLED.load(Ordering::Relaxed).then(|| LiveHeap {
        live: LIVE.load(Ordering::Relaxed),
        peak: PEAK.load(Ordering::Relaxed),
    })
}

fn grew(bytes: usize) {
    let now = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
    if !INSTALLED.load(Ordering::Relaxed) {
        INSTALLED.store(true, Ordering::Relaxed);
    }
}

fn shrank(bytes: usize) {
    LIVE.fetch_sub(bytes, Ordering::Relaxed);
}

// SAFETY: every method forwards to `A` with the same arguments and returns
// its result unchanged; the counting touches only atomics and never
// allocates.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { self.0.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test binary's global allocator is not a `Counting` one, so only
    /// this test moves the count.
    #[test]
    fn counts_allocations_frees_and_reallocations() {
        let a = Counting(std::alloc::System);
        let before = live_heap().map_or(0, |h| h.live);
        let l = Layout::from_size_align(1000, 8).unwrap();
        // SAFETY: a nonzero size; every pointer is freed with its layout.
        unsafe {
            let p = a.alloc(l);
            assert!(!p.is_null());
            assert_eq!(live_heap().unwrap().live, before + 1000);
            let q = a.realloc(p, l, 3000);
            assert!(!q.is_null());
            assert_eq!(live_heap().unwrap().live, before + 3000);
            assert!(live_heap().unwrap().peak >= before + 3000);
            let l3 = Layout::from_size_align(3000, 8).unwrap();
            let r = a.realloc(q, l3, 500);
            assert_eq!(live_heap().unwrap().live, before + 500);
            a.dealloc(r, Layout::from_size_align(500, 8).unwrap());
            let z = a.alloc_zeroed(l);
            assert_eq!(*z, 0);
            assert_eq!(live_heap().unwrap().live, before + 1000);
            a.dealloc(z, l);
        }
        let h = live_heap().unwrap();
        assert_eq!(h.live, before);
        assert!(h.peak >= before + 3000);
    }
}
