//! The single-purpose tools: `canon`, `robots`, `fingerprint`, `hamming`,
//! `near` and `eval`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::args::*;

/// `simcrawl canon`: the canonical form of each URL, or `error: ...`; exit
/// code 2 when any was invalid.
pub(crate) fn canon(args: CanonArgs) -> anyhow::Result<ExitCode> {
    use simcrawl::canon::Canonicalizer;
    use simcrawl::config::CanonProfile;
    use std::io::Write;
    let profile = match args.profile {
        ProfileArg::Rfc3986 => CanonProfile::Rfc3986,
        ProfileArg::Crawler => CanonProfile::Crawler,
    };
    let canon = Canonicalizer::with_profile(profile);
    let base = match args.base.as_deref() {
        None => None,
        Some(b) => Some(
            Canonicalizer::with_profile(CanonProfile::Rfc3986)
                .parse(b)
                .map_err(|e| simcrawl::Error::InvalidInput(format!("--base: {e}")))?,
        ),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut all_ok = true;
    for input in &args.urls {
        let result = match &base {
            Some(b) => canon.resolve(b, input),
            None => canon.parse(input),
        };
        match result {
            Ok(u) => writeln!(out, "{u}")?,
            Err(e) => {
                all_ok = false;
                writeln!(out, "error: {e}")?;
            }
        }
    }
    out.flush()?;
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

/// `simcrawl robots`: `allow`/`disallow` per URL (or `error: ...` for an
/// invalid one), after the Crawl-delay line with `--crawl-delay`. The
/// robots.txt comes from `--robots FILE` or stands for a fetch that got
/// `--status` (a code or `unreachable`). URLs are canonicalized with the
/// `rfc3986` profile before matching; exit code 2 when any was invalid.
pub(crate) fn robots(args: RobotsArgs) -> anyhow::Result<ExitCode> {
    use simcrawl::canon::Canonicalizer;
    use simcrawl::config::CanonProfile;
    use simcrawl::politeness::robots::{policy_for_status, product_token, Robots, RobotsPolicyKind, DEFAULT_MAX_BYTES};
    use simcrawl::Error;
    use std::io::Write;
    let agent = args.agent.as_str();
    if args.urls.is_empty() && !args.crawl_delay {
        return Err(Error::InvalidInput("give URLs to check, or --crawl-delay".into()).into());
    }
    if product_token(agent.trim()).is_empty() {
        return Err(Error::InvalidInput(format!("--agent `{agent}`: a product token is letters, `_` and `-`")).into());
    }
    let robots = match (args.robots.as_deref(), args.status.as_deref()) {
        (Some(path), _) => {
            let body = std::fs::read(path).map_err(|e| Error::io(path, e))?;
            Robots::parse(&body, DEFAULT_MAX_BYTES)
        }
        (None, Some(s)) => {
            let code = if s.eq_ignore_ascii_case("unreachable") {
                None
            } else {
                Some(
                    s.parse::<u16>()
                        .ok()
                        .filter(|c| (100..=599).contains(c))
                        .ok_or_else(|| {
                            Error::InvalidInput(format!(
                                "--status `{s}`: expected an HTTP status 100..=599 or `unreachable`"
                            ))
                        })?,
                )
            };
            let policy = policy_for_status(code);
            policy.robots().ok_or_else(|| {
                Error::InvalidInput(format!(
                    "--status {s}: {}",
                    match policy {
                        RobotsPolicyKind::Parse => "the body decides; pass it with --robots FILE",
                        _ => "a redirect; the target's answer decides",
                    }
                ))
            })?
        }
        (None, None) => return Err(Error::InvalidInput("give --robots FILE or --status CODE".into()).into()),
    };
    let rules = robots.for_agent(agent);
    let canon = Canonicalizer::with_profile(CanonProfile::Rfc3986);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.crawl_delay {
        match rules.crawl_delay() {
            Some(d) => writeln!(out, "{d}")?,
            None => writeln!(out, "none")?,
        }
    }
    let mut all_ok = true;
    for input in &args.urls {
        match canon.parse(input) {
            Ok(u) => writeln!(out, "{}", if rules.is_allowed(&u) { "allow" } else { "disallow" })?,
            Err(e) => {
                all_ok = false;
                writeln!(out, "error: {e}")?;
            }
        }
    }
    out.flush()?;
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

pub(crate) fn fingerprint(args: FingerprintArgs) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let settings = simcrawl::Settings::load(args.config.as_deref(), &args.set)?;
    let top = args.features.then_some(args.top);
    let run = simcrawl::fingerprint::fingerprint_files(&args.paths, &settings.features, top)?;
    for e in &run.failed {
        eprintln!("simcrawl: {e}");
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for f in &run.files {
        writeln!(out, "{:016x}\t{}", f.fingerprint, f.path.display())?;
        for (label, w) in &f.top {
            writeln!(out, "  {w:8.3}\t{label}")?;
        }
    }
    out.flush()?;
    Ok(if run.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `simcrawl hamming`: `q_line\tf_line\tdistance` (1-based) per pair within k,
/// sorted by query then fingerprint.
pub(crate) fn hamming(a: HammingArgs) -> anyhow::Result<ExitCode> {
    use simcrawl::index::batch;
    use std::io::Write;
    // Into the library's error, so bad input keeps exit code 2.
    let index_err = simcrawl::Error::from;
    batch::check_options(a.k, a.tables).map_err(index_err)?;
    let fingerprints = batch::read_fingerprints(&a.fingerprints).map_err(index_err)?;
    let queries = batch::read_fingerprints(&a.queries).map_err(index_err)?;
    let pairs = batch::run(&fingerprints, &queries, a.k, a.tables);
    let stdout_err = |e| simcrawl::Error::io("<stdout>", e);
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    for &(qi, fi, d) in &pairs {
        writeln!(w, "{}\t{}\t{}", qi + 1, fi + 1, d).map_err(stdout_err)?;
    }
    w.flush().map_err(stdout_err)?;
    Ok(ExitCode::SUCCESS)
}

/// `simcrawl near`: `a\tb\tscore` per near-duplicate pair (score: Hamming
/// distance, estimated resemblance or Bloom similarity), or with
/// `--clusters` one tab-separated line of names per cluster.
pub(crate) fn near(a: NearArgs) -> anyhow::Result<ExitCode> {
    use simcrawl::sketch::near::Method;
    use std::io::Write;
    let settings = simcrawl::Settings::default();
    let opts = simcrawl::eval::corpus::NearOptions {
        corpus: a.corpus,
        method: match a.method {
            MethodArg::Simhash => Method::Simhash,
            MethodArg::Minhash => Method::Minhash,
            MethodArg::Bloom => Method::Bloom,
        },
        k: a.k,
        threshold: a.threshold,
    };
    let found = simcrawl::eval::corpus::near(&opts, &settings)?;
    for e in &found.errors {
        eprintln!("simcrawl: {e}");
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if a.clusters {
        for c in found.clusters() {
            let names: Vec<&str> = c.iter().map(|&i| found.names[i].as_str()).collect();
            writeln!(out, "{}", names.join("\t"))?;
        }
    } else {
        for p in &found.pairs {
            let score = match opts.method {
                Method::Simhash => format!("{}", p.score),
                _ => format!("{:.3}", p.score),
            };
            writeln!(
                out,
                "{}\t{}\t{score}",
                found.names[p.a as usize], found.names[p.b as usize]
            )?;
        }
    }
    out.flush().context("writing stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `simcrawl eval`: the table at the headline threshold, and the files
/// written.
pub(crate) fn eval(a: EvalArgs) -> anyhow::Result<ExitCode> {
    use simcrawl::eval::corpus;
    let settings = simcrawl::Settings::default();
    let out_dir = a.out.unwrap_or_else(|| PathBuf::from("."));
    let done = match (a.corpus, a.crawl) {
        (Some(dir), _) => corpus::eval_corpus(&dir, &out_dir, &settings)?,
        (None, Some(crawl)) => corpus::eval_crawl(&crawl, &out_dir, &simcrawl::Settings::of_crawl(&crawl)?)?,
        (None, None) => {
            return Err(simcrawl::Error::InvalidInput("eval needs --corpus DIR or --crawl DIR".into()).into())
        }
    };
    for e in &done.errors {
        eprintln!("simcrawl: {e}");
    }
    print!("{}", done.report.table(simcrawl::eval::PRIMARY_THRESHOLD));
    for p in &done.written {
        println!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `simcrawl config`: `config/default.toml` with its comments and the
/// effective value of every key; a key that is not the default says where
/// it was set.
pub(crate) fn config(args: ConfigArgs) -> anyhow::Result<ExitCode> {
    let path = match (&args.config, &args.crawl) {
        (Some(file), _) => Some(file.clone()),
        (None, Some(dir)) => {
            let own = dir.join(simcrawl::config::SETTINGS_FILE);
            if !own.is_file() {
                return Err(simcrawl::Error::InvalidInput(format!("{}: no such file", own.display())).into());
            }
            Some(own)
        }
        (None, None) => None,
    };
    let settings = simcrawl::Settings::load(path.as_deref(), &args.set)?;
    print!("{}", settings.effective.annotated());
    Ok(ExitCode::SUCCESS)
}
