//! `simcrawl bench`: the built-in benchmarks.

use std::process::ExitCode;

use crate::args::*;

pub(crate) fn run(which: BenchKind) -> anyhow::Result<ExitCode> {
    match which {
        BenchKind::Index {
            n,
            queries,
            tables,
            workload,
            no_btree,
            brute_queries,
        } => {
            use simcrawl::bench::index::{Options, Shape};
            let shapes = match workload {
                WorkloadArg::Random => vec![Shape::Random],
                WorkloadArg::Clustered => vec![Shape::Clustered],
                WorkloadArg::Both => vec![Shape::Random, Shape::Clustered],
            };
            let opts = Options {
                n,
                queries,
                tables,
                shapes,
                no_btree,
                brute_queries,
            };
            simcrawl::bench::index::run(&opts, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        BenchKind::Crawl {
            pages,
            max_pages,
            peer_script,
            no_peer,
            set,
            keep,
            backend,
            workers,
        } => {
            if !workers.is_empty() && backend != BenchBackend::Redis {
                anyhow::bail!("--workers shares the crawl on a Redis Cluster: add --backend redis");
            }
            if backend == BenchBackend::Redis {
                if keep.is_some() {
                    anyhow::bail!("--keep is for the disk store (--backend disk)");
                }
                let opts = simcrawl::bench::RedisBenchOptions {
                    pages,
                    max_pages,
                    overrides: set,
                };
                if workers.is_empty() {
                    simcrawl::bench::run_redis_bench(&opts, &mut std::io::stdout().lock())?;
                } else {
                    simcrawl::bench::run_workers_bench(&opts, &workers, &mut std::io::stdout().lock())?;
                }
                return Ok(ExitCode::SUCCESS);
            }
            let opts = simcrawl::bench::CrawlBenchOptions {
                pages,
                max_pages,
                peer_script: (!no_peer).then_some(peer_script),
                overrides: set,
                keep,
            };
            simcrawl::bench::run_crawl_bench(&opts, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        BenchKind::Hamming {
            fingerprints,
            queries,
            tables,
        } => {
            simcrawl::bench::index::run_batch(fingerprints, queries, tables, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        BenchKind::Resume { pages } => {
            simcrawl::bench::run_resume_bench(pages, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        BenchKind::Frontier { pages } => {
            simcrawl::bench::run_frontier_bench(pages, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        BenchKind::Pipeline { pages, dirs } => {
            simcrawl::bench::run_pipeline_bench(pages, &dirs, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
