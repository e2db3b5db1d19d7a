//! The `simcrawl` binary: parses the command line (clap) and calls the
//! library. No crawling logic lives here.
//!
//! Exit codes: 0 success, 2 bad usage or bad input (one-line reason on
//! stderr), 1 any other failure.
#![deny(clippy::undocumented_unsafe_blocks)]

mod args;
mod bench;
mod crawl;
mod reports;
mod tools;
mod workers;

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;

use args::{Cli, Command};

/// mimalloc instead of the system allocator: the crawl allocates per page
/// (parse tree, text blocks, features, store batches) from several threads;
/// `simcrawl bench crawl` measured glibc malloc/free at about a tenth of the
/// crawler's CPU.
#[cfg(all(feature = "mimalloc", not(feature = "heap-count")))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// With `--features heap-count`, the allocator's blocks are counted too
/// (`simcrawl::bench::Counting`): `bench crawl` prints the live heap's peak
/// beside the peak RSS.
#[cfg(all(feature = "mimalloc", feature = "heap-count"))]
#[global_allocator]
static GLOBAL: simcrawl::bench::Counting<mimalloc::MiMalloc> = simcrawl::bench::Counting(mimalloc::MiMalloc);
#[cfg(all(not(feature = "mimalloc"), feature = "heap-count"))]
#[global_allocator]
static GLOBAL: simcrawl::bench::Counting<std::alloc::System> = simcrawl::bench::Counting(std::alloc::System);

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_t` of
/// mimalloc 3's `mimalloc.h`; libmimalloc-sys names it only for mimalloc 2).
#[cfg(feature = "mimalloc")]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long freed memory stays with the allocator before it is given back
/// to the system, in milliseconds. mimalloc 3 waits 1000 ms, and a crawl
/// frees as fast as it allocates (page texts, store batches, merges of its
/// sorted maps), so a second's worth of freed memory stayed resident: 100 ms
/// lowers the peak RSS of `simcrawl bench crawl` by about a tenth at the same
/// CPU per page (docs/benchmarks.md, memory).
#[cfg(feature = "mimalloc")]
const PURGE_DELAY_MS: std::os::raw::c_long = 100;

/// Set mimalloc's options before the crawl allocates. An environment
/// variable (`MIMALLOC_PURGE_DELAY`) still wins.
fn tune_allocator() {
    #[cfg(feature = "mimalloc")]
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: `mi_option_set` only stores the value of a valid option
        // (`MI_OPTION_PURGE_DELAY` is one: the test below reads its default).
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Demo(args) => crawl::demo(args),
        Command::Crawl(args) if args.workers.is_some() => workers::crawl(args),
        Command::Crawl(args) => crawl::crawl(args),
        Command::Worker(args) => workers::worker(args),
        Command::Testweb(args) => crawl::testweb(args),
        Command::Canon(args) => tools::canon(args),
        Command::Robots(args) => tools::robots(args),
        Command::Fingerprint(args) => tools::fingerprint(args),
        Command::Hamming(a) => tools::hamming(a),
        Command::Near(a) => tools::near(a),
        Command::Report(args) => reports::report(args),
        Command::Explain(args) => reports::explain(args),
        Command::Eval(a) => tools::eval(a),
        Command::Bench(b) => bench::run(b.which),
        Command::Config(args) => tools::config(args),
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "simcrawl=info",
        1 => "simcrawl=debug",
        _ => "simcrawl=trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

fn main() -> ExitCode {
    tune_allocator();
    let cli = Cli::parse();
    init_logging(cli.verbose);
    match run(cli).context("simcrawl") {
        Ok(code) => code,
        Err(err) => {
            // One line: the chain of causes, outermost first; a cause whose
            // text its parent's message already ends with is not repeated.
            let mut chain: Vec<String> = Vec::new();
            for cause in err.chain().skip(1).map(|c| c.to_string()) {
                if !chain.last().is_some_and(|prev| prev.ends_with(&cause)) {
                    chain.push(cause);
                }
            }
            eprintln!("simcrawl: error: {}", chain.join(": "));
            let usage = err.chain().any(|c| {
                c.downcast_ref::<simcrawl::Error>()
                    .is_some_and(simcrawl::Error::is_usage)
                    || c.downcast_ref::<simcrawl::config::ConfigError>().is_some()
            });
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

#[cfg(all(test, feature = "mimalloc"))]
mod tests {
    #[test]
    fn the_purge_delay_option_is_mimallocs() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: reading a valid option (mimalloc clamps unknown ones).
        let get = || unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(
            get(),
            1000,
            "option {} is not mimalloc 3's purge delay",
            super::MI_OPTION_PURGE_DELAY
        );
        super::tune_allocator();
        assert_eq!(get(), super::PURGE_DELAY_MS);
    }
}
