use std::io::Write;

use super::score::w3c_day;
use super::*;

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn locs(p: &Parsed) -> Vec<&str> {
    p.entries.iter().map(|e| e.loc.as_str()).collect()
}

const URLSET: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url>
    <loc>http://a.test/one</loc>
    <lastmod>2026-11-01</lastmod>
    <changefreq>daily</changefreq>
    <priority>0.8</priority>
  </url>
  <url><loc> http://a.test/two?x=1&amp;y=2 </loc></url>
  <url><priority>0.3</priority></url>
</urlset>
"#;

#[test]
fn urlset_entries_with_their_fields() {
    let p = parse(URLSET.as_bytes(), &Limits::default());
    assert_eq!(p.format, Some(Format::UrlSet));
    assert!(!p.gzip);
    assert_eq!(p.error, None);
    assert_eq!(p.cut, None);
    assert_eq!(locs(&p), ["http://a.test/one", "http://a.test/two?x=1&y=2"]);
    assert_eq!(p.entries[0].lastmod.as_deref(), Some("2026-11-01"));
    assert_eq!(p.entries[0].changefreq.as_deref(), Some("daily"));
    assert_eq!(p.entries[0].priority.as_deref(), Some("0.8"));
    assert_eq!(p.entries[1].priority, None);
    // The entry without a <loc>.
    assert_eq!(p.skipped, 1);
    assert_eq!(p.bytes, URLSET.len() as u64);
}

#[test]
fn index_lists_sitemaps() {
    let xml = r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sitemap><loc>http://a.test/s1.xml</loc><lastmod>2026-01-01T10:00:00+00:00</lastmod></sitemap>
      <sitemap><loc>http://a.test/s2.xml.gz</loc></sitemap>
    </sitemapindex>"#;
    let p = parse(xml.as_bytes(), &Limits::default());
    assert_eq!(p.format, Some(Format::Index));
    assert_eq!(locs(&p), ["http://a.test/s1.xml", "http://a.test/s2.xml.gz"]);
    // <url> elements in an index are not its entries.
    let mixed = "<sitemapindex><url><loc>http://a.test/page</loc></url></sitemapindex>";
    assert!(parse(mixed.as_bytes(), &Limits::default()).entries.is_empty());
}

#[test]
fn namespace_prefixes_and_extensions() {
    let xml = r#"<?xml version="1.0"?>
<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"
           xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <sm:url>
    <sm:loc>http://a.test/page</sm:loc>
    <image:image><image:loc>http://cdn.test/picture.jpg</image:loc></image:image>
    <sm:priority>1.0</sm:priority>
  </sm:url>
  <sm:url>
    <image:image><image:loc>http://cdn.test/only-an-image.jpg</image:loc></image:image>
  </sm:url>
</sm:urlset>"#;
    let p = parse(xml.as_bytes(), &Limits::default());
    assert_eq!(p.format, Some(Format::UrlSet));
    assert_eq!(p.error, None);
    // The image's <loc> is not the page's, nor an entry of its own.
    assert_eq!(locs(&p), ["http://a.test/page"]);
    assert_eq!(p.entries[0].priority.as_deref(), Some("1.0"));
    assert_eq!(p.skipped, 1);
}

#[test]
fn cdata_and_character_references() {
    let xml = "<urlset><url><loc><![CDATA[http://a.test/c?a=1&b=2]]></loc></url>\
               <url><loc>http://a.test/&#x41;&#66;</loc></url>\
               <url><loc>http://a.test/&bogus;</loc></url></urlset>";
    let p = parse(xml.as_bytes(), &Limits::default());
    assert_eq!(locs(&p), ["http://a.test/c?a=1&b=2", "http://a.test/AB"]);
    assert_eq!(p.skipped, 1);
}

#[test]
fn gzip_is_recognised_by_its_magic_bytes() {
    let p = parse(&gzip(URLSET.as_bytes()), &Limits::default());
    assert!(p.gzip);
    assert_eq!(p.format, Some(Format::UrlSet));
    assert_eq!(p.entries.len(), 2);
    assert_eq!(p.bytes, URLSET.len() as u64);
    let text = parse(&gzip(b"http://a.test/x\n"), &Limits::default());
    assert!(text.gzip);
    assert_eq!(locs(&text), ["http://a.test/x"]);
}

#[test]
fn corrupt_gzip_keeps_what_was_read() {
    let mut z = gzip(URLSET.as_bytes());
    let n = z.len();
    // Damage the deflate stream past its first bytes.
    for b in &mut z[n / 2..n - 8] {
        *b ^= 0x5a;
    }
    let p = parse(&z, &Limits::default());
    assert!(p.gzip);
    assert!(p.error.is_some(), "{p:?}");
    assert_eq!(p.cut, None);
}

#[test]
fn text_sitemap_one_url_per_line() {
    let text = "\u{feff}http://a.test/1\r\n\n  https://a.test/2  \nnot a url\nftp://a.test/3\nHTTP://A.TEST/4";
    let p = parse(text.as_bytes(), &Limits::default());
    assert_eq!(p.format, Some(Format::Text));
    assert_eq!(locs(&p), ["http://a.test/1", "https://a.test/2", "HTTP://A.TEST/4"]);
    assert_eq!(p.skipped, 2);
    assert_eq!(p.error, None);
}

#[test]
fn broken_xml_keeps_the_urls_before_the_error() {
    let xml = "<urlset><url><loc>http://a.test/1</loc></url><url><loc>http://a.test/2</loc></url>\
               <url><loc>http://a.test/3</lox></url><url><loc>http://a.test/4</loc></url></urlset>";
    let p = parse(xml.as_bytes(), &Limits::default());
    assert_eq!(locs(&p), ["http://a.test/1", "http://a.test/2"]);
    let e = p.error.expect("an error");
    assert!(e.contains("XML error"), "{e}");
    assert_eq!(p.cut, None);
    // Cut short (no closing tags): the entries before are kept too.
    let short = parse(&xml.as_bytes()[..60], &Limits::default());
    assert_eq!(locs(&short), ["http://a.test/1"]);
    assert!(short.error.is_some(), "{short:?}");
}

#[test]
fn not_a_sitemap_is_an_error_not_a_panic() {
    for (body, want) in [
        (&b"<html><body>hi</body></html>"[..], "root element is <html>"),
        (b"", ""),
        (b"<?xml version=\"1.0\"?>", "no root element"),
        (b"\xff\xfe<\x00u\x00", ""),
    ] {
        let p = parse(body, &Limits::default());
        assert!(p.entries.is_empty(), "{p:?}");
        if !want.is_empty() {
            assert!(p.error.as_deref().is_some_and(|e| e.contains(want)), "{p:?}");
        }
    }
    // An empty text file is a text sitemap with nothing in it.
    assert_eq!(parse(b"", &Limits::default()).format, Some(Format::Text));
    assert_eq!(parse(b"<urlset/>", &Limits::default()).format, Some(Format::UrlSet));
}

#[test]
fn entry_limit_stops_reading() {
    let mut xml = String::from("<urlset>");
    for i in 0..50_001 {
        xml.push_str(&format!("<url><loc>http://a.test/{i}</loc></url>"));
    }
    xml.push_str("</urlset>");
    let p = parse(xml.as_bytes(), &Limits::default());
    assert_eq!(p.entries.len(), 50_000);
    assert_eq!(p.cut, Some(Cut::MaxEntries));
    assert_eq!(p.error, None);
    let small = parse(
        xml.as_bytes(),
        &Limits {
            max_entries: 3,
            ..Limits::default()
        },
    );
    assert_eq!(locs(&small), ["http://a.test/0", "http://a.test/1", "http://a.test/2"]);
    assert_eq!(small.cut, Some(Cut::MaxEntries));
    // Exactly at the limit is not cut.
    let text: String = (0..3).map(|i| format!("http://a.test/{i}\n")).collect();
    let exact = parse(
        text.as_bytes(),
        &Limits {
            max_entries: 3,
            ..Limits::default()
        },
    );
    assert_eq!((exact.entries.len(), exact.cut), (3, None));
}

#[test]
fn byte_limit_cuts_a_gzip_bomb() {
    // 60 MiB of padding after one URL: about 60 KiB compressed.
    let head = b"<urlset><url><loc>http://a.test/first</loc></url><!--";
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(head).unwrap();
    let pad = vec![b' '; 1 << 20];
    for _ in 0..60 {
        e.write_all(&pad).unwrap();
    }
    e.write_all(b"--><url><loc>http://a.test/after</loc></url></urlset>")
        .unwrap();
    let bomb = e.finish().unwrap();
    assert!(bomb.len() < 1 << 20, "{} bytes compressed", bomb.len());
    let limits = Limits {
        max_entries: 50_000,
        max_bytes: 4 << 20,
    };
    let p = parse(&bomb, &limits);
    assert!(p.gzip);
    assert_eq!(locs(&p), ["http://a.test/first"]);
    assert_eq!(p.cut, Some(Cut::MaxBytes));
    assert_eq!(p.error, None, "the cut explains the unfinished comment");
    assert_eq!(p.bytes, 4 << 20);
    // The default limit (50 MiB) also stops it before the end.
    let p = parse(&bomb, &Limits::default());
    assert_eq!(p.cut, Some(Cut::MaxBytes));
    assert_eq!(p.bytes, 50 << 20);
}

#[test]
fn byte_limit_exactly_at_the_end_is_not_a_cut() {
    let limits = Limits {
        max_entries: 10,
        max_bytes: URLSET.len() as u64,
    };
    let p = parse(URLSET.as_bytes(), &limits);
    assert_eq!((p.cut, p.error.clone(), p.entries.len()), (None, None, 2));
    let p = parse(
        URLSET.as_bytes(),
        &Limits {
            max_bytes: 100,
            ..limits
        },
    );
    assert_eq!(p.cut, Some(Cut::MaxBytes));
}

#[test]
fn w3c_dates() {
    assert_eq!(w3c_day("1970-01-01"), Some(0));
    assert_eq!(w3c_day("1970-01-02T00:00:00Z"), Some(1));
    assert_eq!(w3c_day("2000-03-01"), Some(11_017));
    assert_eq!(w3c_day("2024-02-29"), Some(19_782));
    assert_eq!(w3c_day("2024"), w3c_day("2024-01-01"));
    assert_eq!(w3c_day("2024-05"), w3c_day("2024-05-01"));
    assert_eq!(w3c_day("2026-11-24T22:55:19.123+01:00"), w3c_day("2026-11-24"));
    for bad in [
        "",
        "2023-02-29",
        "2024-13-01",
        "24-01-01",
        "2024-1-1",
        "yesterday",
        "2024-01-01-01",
    ] {
        assert_eq!(w3c_day(bad), None, "{bad}");
    }
    assert_eq!(
        days_since_epoch(std::time::UNIX_EPOCH + std::time::Duration::from_secs(86_400 * 3 + 5)),
        3
    );
}

#[test]
fn component_is_priority_plus_freshness() {
    let today = w3c_day("2026-11-24").unwrap();
    let e = |lastmod: Option<&str>, freq: Option<&str>, prio: Option<&str>| Entry {
        loc: "http://a.test/".into(),
        lastmod: lastmod.map(str::to_string),
        changefreq: freq.map(str::to_string),
        priority: prio.map(str::to_string),
    };
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(close(score(&e(None, None, None), today), 0.5));
    assert!(close(score(&e(None, None, Some("0.9")), today), 0.9));
    // Out of range or not a number: the default.
    for bad in ["1.5", "-0.1", "NaN", "high"] {
        assert!(close(score(&e(None, None, Some(bad)), today), 0.5), "{bad}");
    }
    assert!(close(score(&e(Some("2026-11-24"), None, Some("1.0")), today), 1.5));
    assert!(close(score(&e(Some("2026-10-25"), None, Some("0.0")), today), 0.25));
    // The future counts as today.
    assert!(close(score(&e(Some("2027-01-01"), None, Some("0.0")), today), 0.5));
    assert!(close(score(&e(None, Some("Weekly"), Some("0.0")), today), 0.3));
    assert!(close(score(&e(None, Some("never"), Some("0.0")), today), 0.0));
    // The larger freshness term counts.
    assert!(close(
        score(&e(Some("2020-01-01"), Some("daily"), Some("0.0")), today),
        0.4
    ));
    let fresh = score(&e(Some("2026-11-20"), None, None), today);
    let stale = score(&e(Some("2025-11-20"), None, None), today);
    assert!(fresh > stale && stale > 0.5, "{fresh} {stale}");
}

#[test]
fn totals_sum_records() {
    let mut t = SitemapTotals::default();
    let mut r = SitemapRecord::new("http://a.test/s.xml", Source::Robots, None, 0);
    r.outcome = Outcome::Cut;
    r.format = Some(Format::UrlSet);
    r.entries = 10;
    r.queued = 7;
    t.add(&r);
    t.add(&SitemapRecord::new("http://a.test/x.xml", Source::Index, None, 1).skipped("already read"));
    let mut idx = SitemapRecord::new("http://a.test/i.xml", Source::Root, None, 0);
    idx.outcome = Outcome::Read;
    idx.format = Some(Format::Index);
    idx.entries = 3;
    t.add(&idx);
    assert_eq!(
        t,
        SitemapTotals {
            read: 2,
            cut: 1,
            broken: 0,
            failed: 0,
            skipped: 1,
            urls: 10,
            queued: 7,
        }
    );
    let line = serde_json::to_string(&r).unwrap();
    assert!(line.contains("\"outcome\":\"cut\""), "{line}");
    assert!(line.contains("\"source\":\"robots\""), "{line}");
    let back: SitemapRecord = serde_json::from_str(&line).unwrap();
    assert_eq!(back, r);
}
