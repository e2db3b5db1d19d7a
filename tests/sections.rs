//! Section templates on a documentation root that serves several sites side
//! by side: a book whose every chapter carries the book's own chrome, an
//! API reference three times its size, and an older copy of the book
//! without that chrome. The book's chrome is on too small a share of the
//! host to be the host's template, so only the `/book/` section's template
//! can cut it; then each old chapter is a near duplicate of its new one.

use simcrawl::crawllog::PageRecord;
use simcrawl::model::Decision;

const CHAPTERS: usize = 20;
const API_PAGES: usize = 60;

const WORDS: &[&str] = &[
    "river", "stone", "lantern", "harbor", "meadow", "copper", "signal", "winter", "orchard", "ladder", "thread",
    "compass", "market", "valley", "engine", "candle", "garden", "mirror", "forest", "bridge", "letter", "anchor",
    "window", "summer", "basket", "tunnel", "feather", "castle", "pocket", "silver", "hammer", "island",
];

/// `n` words drawn from [`WORDS`] by a fixed generator seeded with `seed`.
fn prose(seed: u64, n: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            WORDS[(x % WORDS.len() as u64) as usize]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn page(title: &str, chrome: &str, body: &str, links: &[String]) -> String {
    let links: String = links
        .iter()
        .map(|href| format!("<li><a href=\"{href}\">{href}</a></li>"))
        .collect();
    format!(
        "<html><head><title>{title}</title></head><body>{chrome}<h1>{title}</h1><p>{body}</p><ul>{links}</ul></body></html>"
    )
}

/// The site: `(html)` at `path`, or None.
fn site(path: &str) -> Option<String> {
    // The book's chrome: its own help box, on every chapter, in no element
    // or class that marks furniture by itself.
    let book_chrome = "<div class=\"kbd\"><p>Press the left or right arrow to turn the page, S to search \
                       the book, the question mark for this help and escape to close it again.</p></div>";
    let chapter = |i: usize| prose(1000 + i as u64, 60);
    match path {
        "/" => Some(page(
            "Docs",
            "",
            "The documentation.",
            &["/api/".into(), "/book/".into()],
        )),
        "/api/" => Some(page(
            "API",
            "",
            "Every item.",
            &(0..API_PAGES).map(|i| format!("/api/item{i}.html")).collect::<Vec<_>>(),
        )),
        "/book/" => Some(page(
            "The book",
            "",
            "Chapters.",
            &(0..CHAPTERS).map(|i| format!("/book/ch{i}.html")).collect::<Vec<_>>(),
        )),
        "/old-book/" => Some(page(
            "The old book",
            "",
            "Chapters of the first edition.",
            &(0..CHAPTERS)
                .map(|i| format!("/old-book/ch{i}.html"))
                .collect::<Vec<_>>(),
        )),
        _ => {
            let (dir, file) = path.trim_start_matches('/').split_once('/')?;
            if dir == "api" {
                let i: usize = file.strip_prefix("item")?.strip_suffix(".html")?.parse().ok()?;
                return (i < API_PAGES).then(|| page(&format!("Item {i}"), "", &prose(i as u64, 60), &[]));
            }
            let i: usize = file.strip_prefix("ch")?.strip_suffix(".html")?.parse().ok()?;
            if i >= CHAPTERS {
                return None;
            }
            let title = format!("Chapter {i}");
            match dir {
                // The last chapter leads to the old edition, so the old
                // chapters come after every new one.
                "book" if i + 1 == CHAPTERS => Some(page(&title, book_chrome, &chapter(i), &["/old-book/".into()])),
                "book" => Some(page(&title, book_chrome, &chapter(i), &[])),
                "old-book" => Some(page(&title, "", &chapter(i), &[])),
                _ => None,
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_section_template_finds_a_book_copied_without_its_chrome() {
    let port = crate::support::serve_site(site).await;
    let o: Vec<String> = [
        "crawl.max_pages=200",
        "crawl.concurrency=1",
        "politeness.min_delay_ms=0",
        "politeness.delay_factor=0.0",
    ]
    .map(String::from)
    .to_vec();
    let (_dir, records) = crate::support::crawl_port(port, &o).await;
    let in_dir = |r: &PageRecord, d: &str| url::Url::parse(&r.url).unwrap().path().starts_with(d);
    let chapter = |r: &PageRecord| r.url.contains("/ch");
    let fetched = records.iter().filter(|r| chapter(r)).count();
    assert_eq!(fetched, 2 * CHAPTERS, "every chapter of both editions is crawled");
    // Every new chapter is its own page; the old ones are copies of them.
    for r in records.iter().filter(|r| in_dir(r, "/book/") && chapter(r)) {
        assert_eq!(r.decision, Decision::New, "{}", r.url);
    }
    let copies: Vec<&PageRecord> = records
        .iter()
        .filter(|r| in_dir(r, "/old-book/") && chapter(r))
        .filter(|r| {
            r.decision == Decision::NearDuplicate
                && r.dup_of.as_deref() == Some(r.url.replace("/old-book/", "/book/").as_str())
        })
        .collect();
    assert!(
        copies.len() >= CHAPTERS - 2,
        "{} of {CHAPTERS} old chapters found as copies: {:?}",
        copies.len(),
        records
            .iter()
            .filter(|r| in_dir(r, "/old-book/"))
            .map(|r| (&r.url, r.decision, &r.dup_of, r.resemblance))
            .collect::<Vec<_>>()
    );
    // No API page is anybody's copy.
    assert!(records
        .iter()
        .filter(|r| in_dir(r, "/api/"))
        .all(|r| r.decision == Decision::New));
}
