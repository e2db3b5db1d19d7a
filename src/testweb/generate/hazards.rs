//! The hazard hosts: traps.test (a redirect chain, a cross-host redirect,
//! a redirect loop, an endless calendar) and errors.test (404, 500, 429 and
//! 503 with Retry-After, a slow page, an oversized body, PDF, PNG and a
//! windows-1252 page).

use std::time::Duration;

use bytes::Bytes;

use super::rules::{redirect, ERROR_PATHS, TRAP_LINKS};
use super::{html, not_found, parse_id, simple_page, stream, HTML};
use crate::testweb::rng::Rng;
use crate::testweb::text;
use crate::testweb::{Reply, TestWeb, BIG_BODY_BYTES};

/// The `errors.test/big` body: an HTML page of exactly [`BIG_BODY_BYTES`].
pub(crate) fn big_body(seed: u64) -> Bytes {
    let mut rng = Rng::for_stream(&[seed, stream::BIG]);
    let mut s = String::with_capacity(BIG_BODY_BYTES + 1024);
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>A very large page</title></head><body>\n<h1>A very large page</h1>\n");
    let end = "</body></html>\n";
    while s.len() < BIG_BODY_BYTES - 2048 {
        s.push_str("<p>");
        s.push_str(&text::sentence_words(&mut rng, 0, 100));
        s.push_str("</p>\n");
    }
    s.push_str("<!--");
    while s.len() < BIG_BODY_BYTES - end.len() - 3 {
        s.push('x');
    }
    s.push_str("-->");
    s.push_str(end);
    Bytes::from(s)
}

/// A 1x1 transparent PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0D, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

/// A small fake PDF document.
const PDF: &[u8] = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n";

/// Text the windows-1252 page must decode to (it is in its body).
pub(crate) const LEGACY_TEXT: &str = "Café crème brûlée – “naïve” façade for 5 €";

impl TestWeb {
    /// A traps.test page: the front page, the redirect chain and loop, the calendar.
    pub(super) fn traps(&self, path: &str, port: u16) -> Reply {
        if path == "/" {
            let links: Vec<(String, String)> = TRAP_LINKS.iter().map(|p| (p.to_string(), p.to_string())).collect();
            return html(
                200,
                simple_page("Traps", "Redirects, loops and an endless calendar.", &links),
            );
        }
        if path == "/redirect/end" {
            return html(
                200,
                simple_page("End of the chain", "You followed four redirects.", &[]),
            );
        }
        if let Some((status, location)) = redirect(path, port) {
            let mut r = html(
                status,
                format!("<!DOCTYPE html>\n<html><body><a href=\"{location}\">moved</a></body></html>\n"),
            );
            r.location = Some(location);
            return r;
        }
        let segs: Vec<&str> = path[1..].split('/').collect();
        if let ["calendar", y, m, ""] = segs.as_slice() {
            if let (Some(y), Some(m)) = (parse_id(y), m.parse::<usize>().ok().filter(|_| m.len() == 2)) {
                if (1..=9999).contains(&y) && (1..=12).contains(&m) {
                    return html(200, calendar_page(y, m));
                }
            }
        }
        not_found()
    }

    /// An errors.test page: every way a fetch can fail or surprise.
    pub(super) fn errors(&self, path: &str) -> Reply {
        match path {
            "/" => {
                let links: Vec<(String, String)> = ERROR_PATHS.iter().map(|p| (p.to_string(), p.to_string())).collect();
                html(200, simple_page("Errors", "Pages that fail in every way.", &links))
            }
            "/error500" => html(500, simple_page("Internal server error", "Something broke.", &[])),
            "/busy" | "/unavailable" => {
                let mut r = html(
                    if path == "/busy" { 429 } else { 503 },
                    simple_page("Try again later", "Too many requests; come back in a second.", &[]),
                );
                r.retry_after_secs = Some(1);
                r
            }
            "/busy-once" => html(
                200,
                simple_page("Busy once", "This page answered 429 once, then this.", &[]),
            ),
            "/slow" => {
                let mut r = html(200, simple_page("A slow page", "This page takes its time.", &[]));
                r.delay = Duration::from_millis(self.opts.slow_ms);
                r
            }
            "/big" => Reply {
                status: 200,
                content_type: Some(HTML),
                location: None,
                retry_after_secs: None,
                delay: Duration::ZERO,
                body: self.big_body.clone(),
            },
            "/report.pdf" => binary("application/pdf", PDF),
            "/logo.png" => binary("image/png", PNG),
            "/legacy" => {
                let page = format!(
                    "<!DOCTYPE html>\n<html lang=\"fr\"><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1252\"><title>Page en windows-1252</title></head>\n<body><h1>Menu</h1><p>{LEGACY_TEXT}</p></body></html>\n"
                );
                let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode(&page);
                Reply {
                    status: 200,
                    content_type: Some("text/html"),
                    location: None,
                    retry_after_secs: None,
                    delay: Duration::ZERO,
                    body: Bytes::from(bytes.into_owned()),
                }
            }
            _ => not_found(),
        }
    }
}

/// A 200 answer with a static non-HTML body.
fn binary(content_type: &'static str, body: &'static [u8]) -> Reply {
    Reply {
        status: 200,
        content_type: Some(content_type),
        location: None,
        retry_after_secs: None,
        delay: Duration::ZERO,
        body: Bytes::from_static(body),
    }
}

/// The calendar page of month `m` of year `y`: links to the previous and
/// next month and the next year, forever.
fn calendar_page(y: usize, m: usize) -> String {
    let (py, pm) = if m == 1 {
        (y.saturating_sub(1).max(1), 12)
    } else {
        (y, m - 1)
    };
    let (ny, nm) = if m == 12 { ((y + 1).min(9999), 1) } else { (y, m + 1) };
    simple_page(
        &format!("Events in {y}-{m:02}"),
        "No events this month.",
        &[
            (format!("/calendar/{py}/{pm:02}/"), "Previous month".into()),
            (format!("/calendar/{ny}/{nm:02}/"), "Next month".into()),
            (format!("/calendar/{}/{m:02}/", (y + 1).min(9999)), "Next year".into()),
        ],
    )
}
