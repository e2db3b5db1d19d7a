//! `simcrawl report` and `explain`: reading a stored crawl.

use std::process::ExitCode;

use anyhow::Context;

use crate::args::*;

pub(crate) fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    use simcrawl::report::{self, Format, ReportKind as Kind};
    let kind = match args.kind {
        ReportKind::Summary => Kind::Summary,
        ReportKind::Clusters => Kind::Clusters,
        ReportKind::Mirrors => Kind::Mirrors,
    };
    let format = match args.format {
        FormatArg::Json => Format::Json,
        FormatArg::Csv => Format::Csv,
        FormatArg::Html => Format::Html,
    };
    let settings = simcrawl::Settings::of_crawl(&args.crawl)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    report::render_crawl(kind, format, &args.crawl, &settings, &mut out)?;
    std::io::Write::flush(&mut out).context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn explain(args: ExplainArgs) -> anyhow::Result<ExitCode> {
    let settings = simcrawl::Settings::of_crawl(&args.crawl)?;
    let text = simcrawl::report::explain::explain(&args.crawl, &args.url, &settings)?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}
