//! Self-contained HTML pages of the reports (reports stage): inline CSS, a
//! few lines of inline JavaScript to sort tables by clicking a header, and
//! inline SVG bar charts for the fingerprint statistics (Manku Figure 2). No
//! network access and no external assets.

use std::fmt::Write as _;
use std::io;

use super::clusters::Plan;
use super::summary::Summary;
use crate::mirror::{MatchKind, MirrorReport};

/// Escape text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}\
h1{font-size:22px}h2{font-size:18px;margin-top:28px}\
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\
th{background:#eef;cursor:pointer;user-select:none}th.sorted-asc::after{content:' \\25B2'}th.sorted-desc::after{content:' \\25BC'}\
td.num{text-align:right;font-variant-numeric:tabular-nums}tr:nth-child(even) td{background:#fafafa}\
.full{color:#060;font-weight:bold}.partial{color:#a60;font-weight:bold}.overlap{color:#777}\
.exact{color:#060}.near{color:#a60}.differ{color:#b00}.muted{color:#777}code{font-size:13px}\
.pair{border:1px solid #ccc;border-radius:4px;padding:8px 12px;margin:12px 0}\
.charts{display:flex;flex-wrap:wrap;gap:24px}svg{background:#fff;border:1px solid #ddd}";

/// Click-to-sort for every `table.sortable`; numbers sort numerically.
const SCRIPT: &str = r#"
(function () {
  function key(td) {
    var t = td ? (td.getAttribute('data-v') || td.textContent) : '';
    var n = parseFloat(t);
    return isNaN(n) ? t.toLowerCase() : n;
  }
  var tables = document.querySelectorAll('table.sortable');
  Array.prototype.forEach.call(tables, function (table) {
    var heads = table.querySelectorAll('thead th');
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener('click', function () {
        var asc = !th.classList.contains('sorted-asc');
        Array.prototype.forEach.call(heads, function (h) { h.classList.remove('sorted-asc', 'sorted-desc'); });
        th.classList.add(asc ? 'sorted-asc' : 'sorted-desc');
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[col]), y = key(b.cells[col]);
          if (typeof x !== typeof y) { x = String(x); y = String(y); }
          return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  document.body.setAttribute('data-sort-ready', 'yes');
})();
"#;

fn page(title: &str, body: &str) -> String {
    format!("{}{body}{}", page_head(title), page_tail())
}

/// A page up to its body.
fn page_head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{t}</title>\n\
         <style>{STYLE}</style>\n</head>\n<body>\n<h1>{t}</h1>\n",
        t = escape(title)
    )
}

/// A page after its body.
fn page_tail() -> String {
    format!("\n<script>{SCRIPT}</script>\n</body>\n</html>\n")
}

/// [`std::fmt::Write`] over an [`io::Write`], so that a page too large to
/// hold (the clusters of a large crawl) is written as it is made. It keeps
/// the first I/O error ([`Sink::finish`]).
struct Sink<'a> {
    out: &'a mut dyn io::Write,
    err: Option<io::Error>,
}

impl<'a> Sink<'a> {
    fn new(out: &'a mut dyn io::Write) -> Self {
        Sink { out, err: None }
    }

    fn finish(self) -> io::Result<()> {
        self.err.map_or(Ok(()), Err)
    }
}

impl std::fmt::Write for Sink<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.err.is_some() {
            return Err(std::fmt::Error);
        }
        self.out.write_all(s.as_bytes()).map_err(|e| {
            self.err = Some(e);
            std::fmt::Error
        })
    }
}

/// A cell: text or a right-aligned number.
enum Cell {
    Text(String),
    Html(String),
    Num(String),
}

fn table(out: &mut impl std::fmt::Write, id: &str, heads: &[&str], rows: impl Iterator<Item = Vec<Cell>>) {
    let _ = write!(out, "<table class=\"sortable\" id=\"{id}\"><thead><tr>");
    for h in heads {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    let _ = out.write_str("</tr></thead><tbody>\n");
    for row in rows {
        let _ = out.write_str("<tr>");
        for c in row {
            match c {
                Cell::Text(t) => {
                    let _ = write!(out, "<td>{}</td>", escape(&t));
                }
                Cell::Html(h) => {
                    let _ = write!(out, "<td>{h}</td>");
                }
                Cell::Num(n) => {
                    let _ = write!(out, "<td class=\"num\">{}</td>", escape(&n));
                }
            }
        }
        let _ = out.write_str("</tr>\n");
    }
    let _ = out.write_str("</tbody></table>\n");
}

fn num(n: impl ToString) -> Cell {
    Cell::Num(n.to_string())
}

fn fixed(x: f64, digits: usize) -> Cell {
    Cell::Num(format!("{x:.digits$}"))
}

fn opt_fixed(x: Option<f64>) -> Cell {
    Cell::Num(x.map(|v| format!("{v:.1}")).unwrap_or_default())
}

/// An inline SVG bar chart of `values`, with an optional reference line.
fn bar_chart(title: &str, x_label: &str, values: &[u64], reference: Option<&[f64]>) -> String {
    let (w, h, left, bottom, top) = (560.0, 260.0, 50.0, 40.0, 28.0);
    let plot_w = w - left - 10.0;
    let plot_h = h - bottom - top;
    let max_ref = reference.map_or(0.0, |r| r.iter().copied().fold(0.0, f64::max));
    let max = (values.iter().copied().max().unwrap_or(0) as f64).max(max_ref).max(1.0);
    let n = values.len().max(1) as f64;
    let bw = plot_w / n;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{t}\">\
         <text x=\"{cx}\" y=\"18\" text-anchor=\"middle\" font-size=\"13\">{t}</text>",
        t = escape(title),
        cx = w / 2.0
    );
    // Axes and ticks.
    let y0 = top + plot_h;
    let _ = write!(
        s,
        "<line x1=\"{left}\" y1=\"{y0}\" x2=\"{x2}\" y2=\"{y0}\" stroke=\"#333\"/>\
         <line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{y0}\" stroke=\"#333\"/>",
        x2 = left + plot_w
    );
    for frac in [0.0, 0.5, 1.0] {
        let y = y0 - frac * plot_h;
        let _ = write!(
            s,
            "<text x=\"{x}\" y=\"{ty}\" text-anchor=\"end\" font-size=\"10\">{v}</text>",
            x = left - 4.0,
            ty = y + 3.0,
            v = (frac * max).round()
        );
    }
    let step = (values.len() / 8).max(1);
    for i in (0..values.len()).step_by(step) {
        let _ = write!(
            s,
            "<text x=\"{x:.1}\" y=\"{y}\" text-anchor=\"middle\" font-size=\"10\">{i}</text>",
            x = left + (i as f64 + 0.5) * bw,
            y = y0 + 12.0
        );
    }
    let _ = write!(
        s,
        "<text x=\"{x}\" y=\"{y}\" text-anchor=\"middle\" font-size=\"11\">{l}</text>",
        x = left + plot_w / 2.0,
        y = h - 8.0,
        l = escape(x_label)
    );
    for (i, &v) in values.iter().enumerate() {
        if v == 0 {
            continue;
        }
        let bh = v as f64 / max * plot_h;
        let _ = write!(
            s,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{bw:.2}\" height=\"{bh:.2}\" fill=\"#4a7bd0\"><title>{i}: {v}</title></rect>",
            x = left + i as f64 * bw,
            y = y0 - bh,
            bw = (bw - 0.5).max(0.5)
        );
    }
    if let Some(r) = reference {
        let pts: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", left + (i as f64 + 0.5) * bw, y0 - v / max * plot_h))
            .collect();
        let _ = write!(
            s,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#d04a4a\" stroke-width=\"1.5\"/>",
            pts.join(" ")
        );
    }
    s.push_str("</svg>");
    s
}

/// An inline SVG line chart of `(x, y)` points with y in 0..=1.
fn rate_chart(title: &str, x_label: &str, y_label: &str, points: &[(u64, f64)]) -> String {
    let (w, h, left, bottom, top) = (560.0, 260.0, 50.0, 40.0, 28.0);
    let plot_w = w - left - 10.0;
    let plot_h = h - bottom - top;
    let y0 = top + plot_h;
    let max_x = points.iter().map(|p| p.0).max().unwrap_or(1).max(1) as f64;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{t}\">\
         <text x=\"{cx}\" y=\"18\" text-anchor=\"middle\" font-size=\"13\">{t}</text>\
         <line x1=\"{left}\" y1=\"{y0}\" x2=\"{x2}\" y2=\"{y0}\" stroke=\"#333\"/>\
         <line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{y0}\" stroke=\"#333\"/>\
         <text x=\"{mx}\" y=\"{ly}\" text-anchor=\"middle\" font-size=\"11\">{xl}</text>\
         <text x=\"12\" y=\"{my}\" font-size=\"11\" transform=\"rotate(-90 12 {my})\" text-anchor=\"middle\">{yl}</text>",
        t = escape(title),
        cx = w / 2.0,
        x2 = left + plot_w,
        mx = left + plot_w / 2.0,
        ly = h - 8.0,
        my = top + plot_h / 2.0,
        xl = escape(x_label),
        yl = escape(y_label),
    );
    for frac in [0.0, 0.5, 1.0] {
        let _ = write!(
            s,
            "<text x=\"{x}\" y=\"{y:.1}\" text-anchor=\"end\" font-size=\"10\">{frac}</text>\
             <text x=\"{tx:.1}\" y=\"{ty}\" text-anchor=\"middle\" font-size=\"10\">{v}</text>",
            x = left - 4.0,
            y = y0 - frac * plot_h + 3.0,
            tx = left + frac * plot_w,
            ty = y0 + 12.0,
            v = (frac * max_x).round()
        );
    }
    let pts: Vec<String> = points
        .iter()
        .map(|&(x, y)| {
            format!(
                "{:.1},{:.1}",
                left + x as f64 / max_x * plot_w,
                y0 - y.clamp(0.0, 1.0) * plot_h
            )
        })
        .collect();
    let _ = write!(
        s,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#4a7bd0\" stroke-width=\"2\"/></svg>",
        pts.join(" ")
    );
    s
}

/// The summary page.
pub fn summary_page(s: &Summary) -> String {
    let mut b = String::new();
    let _ = write!(
        b,
        "<p>{} fetch attempts, {} pages with content, {} hosts; {} duplicates ({} exact, {} near), \
         duplicate rate {:.1}%.</p>",
        s.records,
        s.pages,
        s.hosts_count,
        s.dedup.duplicates,
        s.dedup.exact,
        s.dedup.near,
        s.dedup.duplicate_rate * 100.0
    );
    if let Some(hv) = &s.harvest {
        let _ = write!(
            b,
            "<h2>Focus: harvest rate</h2>\
             <p>{} of {} parsed pages on-topic (relevance ≥ {}): harvest rate <b>{:.3}</b>, \
             {:.3} over the first half; mean relevance {:.3}.</p>\
             <div class=\"charts\">{}</div>\
             <p class=\"muted\">Cumulative fraction of on-topic pages (by the crawl's own relevance \
             score, not a ground truth) against pages fetched, in crawl order.</p>",
            hv.on_topic_pages,
            hv.pages,
            hv.on_topic,
            hv.harvest_rate,
            hv.first_half_rate,
            hv.mean_relevance,
            rate_chart("harvest rate", "pages fetched", "on-topic fraction", &hv.curve)
        );
    }
    if let Some(v) = &s.revisits {
        let classes: Vec<String> = v
            .by_change
            .iter()
            .map(|c| format!("{} {}", c.change, c.count))
            .collect();
        let _ = write!(
            b,
            "<h2>Recrawl</h2><p>{} revisits: {}; {} answered 304 Not Modified; {} without content.</p>",
            v.revisits,
            classes.join(", "),
            v.not_modified,
            v.no_content
        );
    }
    b.push_str("<h2>Pages by decision</h2>");
    table(
        &mut b,
        "by-decision",
        &["decision", "count"],
        s.by_decision
            .iter()
            .map(|d| vec![Cell::Text(d.decision.clone()), num(d.count)]),
    );
    b.push_str("<h2>Pages by status</h2>");
    table(
        &mut b,
        "by-status",
        &["status", "count"],
        s.by_status.iter().map(|d| vec![num(d.status), num(d.count)]),
    );
    b.push_str("<h2>Pages by content type</h2>");
    table(
        &mut b,
        "by-type",
        &["content type", "count"],
        s.by_content_type
            .iter()
            .map(|d| vec![Cell::Text(d.content_type.clone()), num(d.count)]),
    );
    b.push_str("<h2>Hosts</h2>");
    table(
        &mut b,
        "hosts",
        &[
            "host",
            "fetched",
            "pages",
            "duplicates",
            "duplicate rate",
            "errors",
            "disallowed",
            "bytes",
            "mean latency ms",
            "mean delay ms",
        ],
        s.hosts.iter().map(|h| {
            vec![
                Cell::Text(h.host.clone()),
                num(h.fetched),
                num(h.pages),
                num(h.duplicates),
                fixed(h.duplicate_rate, 3),
                num(h.errors),
                num(h.disallowed),
                num(h.bytes),
                opt_fixed(h.mean_latency_ms),
                opt_fixed(h.mean_delay_ms),
            ]
        }),
    );
    b.push_str("<h2>Fetches saved by dedup</h2><ul>");
    let _ = write!(
        b,
        "<li>out-links found on duplicate pages (dropped or demoted): {}</li>\
         <li>fetched URLs that carried a mirror penalty: {}</li>",
        s.dedup.duplicate_outlinks, s.dedup.mirror_demoted_fetched
    );
    match (&s.dedup.fetches_saved, &s.dedup.crawl_stats) {
        (Some(n), Some(cs)) => {
            let _ = write!(
                b,
                "<li>fetches saved (crawl counters): <b>{n}</b> (duplicate out-links dropped: {}, \
                 demoted: {}, mirror fetches saved: {})</li>",
                super::opt(cs.dup_links_dropped),
                super::opt(cs.dup_links_demoted),
                super::opt(cs.mirror_fetches_saved)
            );
        }
        _ => b.push_str("<li class=\"muted\">no crawl_stats.json: the crawl's own counters are not available</li>"),
    }
    b.push_str("</ul>");
    let f = &s.fingerprints;
    let _ = write!(
        b,
        "<h2>Fingerprint distribution (Manku et al. §4.2, Figure 2)</h2>\
         <p>{} fingerprints, {} distinct, {} zero. Bucket chi-square against uniform: {:.1} \
         (127 degrees of freedom: about 127 ± 16 if uniform); largest bucket / mean: {:.2}.</p>\
         <div class=\"charts\">{}{}</div>\
         <p class=\"muted\">(a) bars: leading 1-bit position of XORs of successive sorted fingerprints; \
         red line: expected for uniformly random fingerprints. (b) distinct fingerprints in 128 equal buckets.</p>",
        f.count,
        f.distinct,
        f.zero,
        f.bucket_chi_square,
        f.bucket_max_ratio,
        bar_chart(
            "(a) leading 1-bit of successive XORs",
            "bit position (0 = most significant)",
            &f.leading_bit,
            Some(&f.leading_bit_uniform)
        ),
        bar_chart("(b) fingerprints per bucket", "bucket (top 7 bits)", &f.buckets, None)
    );
    page("simcrawl: crawl summary", &b)
}

/// The clusters page, written to `out` as it is made (one table row per
/// member: its size follows the crawl's).
pub fn write_clusters_page(c: &Plan, out: &mut dyn io::Write) -> io::Result<()> {
    let mut b = Sink::new(out);
    let _ = b.write_str(&page_head("simcrawl: duplicate clusters"));
    let _ = write!(
        b,
        "<p>{} clusters, {} pages in clusters, largest {}.</p>",
        c.clusters_count(),
        c.pages_in_clusters(),
        c.largest()
    );
    table(
        &mut b,
        "clusters",
        &["id", "size", "exact", "near", "hosts", "max distance", "original"],
        c.clusters().map(|cl| {
            vec![
                num(cl.id),
                num(cl.size),
                num(cl.exact),
                num(cl.near),
                num(cl.hosts),
                num(cl.max_distance),
                Cell::Html(format!("<a href=\"#c{}\">{}</a>", cl.id, escape(&cl.original))),
            ]
        }),
    );
    for cl in c.clusters() {
        let _ = write!(b, "<h2 id=\"c{}\">Cluster {} ({} pages)</h2>", cl.id, cl.id, cl.size);
        table(
            &mut b,
            &format!("members-{}", cl.id),
            &["url", "decision", "dup of", "distance", "distance to original"],
            cl.members.iter().map(|m| {
                vec![
                    Cell::Text(m.url.clone()),
                    Cell::Text(m.decision.clone()),
                    Cell::Text(m.dup_of.clone().unwrap_or_default()),
                    Cell::Num(super::opt(m.distance)),
                    Cell::Num(super::opt(m.distance_to_original)),
                ]
            }),
        );
    }
    let _ = b.write_str(&page_tail());
    b.finish()
}

fn match_class(m: MatchKind) -> &'static str {
    match m {
        MatchKind::Exact => "exact",
        MatchKind::Near => "near",
        MatchKind::Differ => "differ",
    }
}

/// The mirrors page: pair table, mirror sets, and example URL pairs side by side.
pub fn mirrors_page(m: &MirrorReport) -> String {
    let mut b = String::new();
    let mirrors = m.pairs.iter().filter(|p| p.kind.is_mirror()).count();
    let _ = write!(
        b,
        "<p>{} pages with content on {} hosts; {} cross-host duplicate matches proposed {} candidate pairs; \
         {} mirror pairs (thresholds: at least {} compared paths, score and coverage ≥ {}).</p>",
        m.pages, m.hosts, m.matches, m.candidates, mirrors, m.min_sample, m.min_score
    );
    b.push_str("<h2>Pairs</h2>");
    table(
        &mut b,
        "pairs",
        &[
            "kind", "side A", "side B", "compared", "exact", "near", "differ", "only A", "only B", "score", "coverage",
            "support",
        ],
        m.pairs.iter().map(|p| {
            vec![
                Cell::Html(format!("<span class=\"{k}\">{k}</span>", k = p.kind.as_str())),
                Cell::Text(format!("{}{}", p.host_a, p.prefix_a)),
                Cell::Text(format!("{}{}", p.host_b, p.prefix_b)),
                num(p.compared),
                num(p.exact),
                num(p.near),
                num(p.differ),
                num(p.only_a),
                num(p.only_b),
                fixed(p.score, 3),
                fixed(p.coverage, 3),
                num(p.support),
            ]
        }),
    );
    b.push_str("<h2>Mirror sets</h2>");
    if m.sets.is_empty() {
        b.push_str("<p class=\"muted\">No mirror sets.</p>");
    } else {
        let _ = write!(
            b,
            "<p class=\"muted\">Canonical host rule: {}.</p>",
            escape(&m.canonical_rule)
        );
        table(
            &mut b,
            "sets",
            &["canonical host", "hosts", "in-links"],
            m.sets.iter().map(|s| {
                vec![
                    Cell::Text(s.canonical.clone()),
                    Cell::Text(s.hosts.join(", ")),
                    Cell::Text(s.inlinks.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
                ]
            }),
        );
    }
    b.push_str("<h2>Example URL pairs</h2>");
    for (i, p) in m.pairs.iter().enumerate() {
        let _ = write!(
            b,
            "<div class=\"pair\" id=\"pair-{i}\"><b class=\"{k}\">{k}</b> <code>{}{}</code> ↔ <code>{}{}</code> \
             — {} of {} compared paths match (score {:.3})",
            escape(&p.host_a),
            escape(&p.prefix_a),
            escape(&p.host_b),
            escape(&p.prefix_b),
            p.exact + p.near,
            p.compared,
            p.score,
            k = p.kind.as_str()
        );
        table(
            &mut b,
            &format!("examples-{i}"),
            &["relative path", "URL on side A", "URL on side B", "match", "distance"],
            p.examples.iter().map(|e| {
                let k = match_class(e.matched);
                vec![
                    Cell::Text(if e.path.is_empty() {
                        "(index)".into()
                    } else {
                        e.path.clone()
                    }),
                    Cell::Text(e.url_a.clone()),
                    Cell::Text(e.url_b.clone()),
                    Cell::Html(format!("<span class=\"{k}\">{k}</span>")),
                    Cell::Num(super::opt(e.distance)),
                ]
            }),
        );
        b.push_str("</div>");
    }
    page("simcrawl: mirror report", &b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes `room` bytes, then fails.
    struct Full {
        room: usize,
        got: Vec<u8>,
    }

    impl io::Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "full"));
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            self.got.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_written_page_is_the_page_and_a_failed_write_is_an_error() {
        let log = crate::mirror::LogDigest::default();
        let c = Plan::new(&log);
        let mut all = Full {
            room: usize::MAX,
            got: Vec::new(),
        };
        write_clusters_page(&c, &mut all).unwrap();
        let body = "<p>0 clusters, 0 pages in clusters, largest 0.</p>";
        let text = String::from_utf8(all.got).unwrap();
        assert!(text.starts_with(&page("simcrawl: duplicate clusters", body)[..200]));
        assert!(text.ends_with(&page_tail()));
        let mut short = Full {
            room: 100,
            got: Vec::new(),
        };
        let e = write_clusters_page(&c, &mut short).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }

    #[test]
    fn rate_chart_is_a_polyline() {
        let svg = rate_chart("h", "x", "y", &[(1, 1.0), (2, 0.5), (4, 0.25)]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert!(svg.contains("550.0,"), "the last point is at the right edge: {svg}");
    }

    #[test]
    fn chart_is_inline_svg() {
        let svg = bar_chart("t<", "x", &[1, 0, 3], Some(&[1.0, 1.0, 1.0]));
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert_eq!(svg.matches("<rect").count(), 2);
        assert!(svg.contains("t&lt;") && svg.contains("<polyline"));
    }
}
