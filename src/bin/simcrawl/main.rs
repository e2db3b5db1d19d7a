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
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
