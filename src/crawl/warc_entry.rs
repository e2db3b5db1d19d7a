//! What a fetch leaves for the WARC files (`output.warc`): the parts of a
//! response the records need beyond the crawl-log record ([`Capture`],
//! taken by the worker), and the records of a decided page
//! ([`warc_entry`], built by the decider and handed to the writer thread,
//! [`crate::warc::WarcThread`]).

use std::time::SystemTime;

use serde::Serialize;

use crate::crawllog::PageRecord;
use crate::fetch::FetchResponse;
use crate::model::{Decision, PageId};

/// The parts of a response the WARC records need beyond the crawl-log
/// record. A parsed page's body is not here: it comes back from the
/// analysis in `Analysis::body`.
#[derive(Default)]
pub(super) struct Capture {
    headers: Vec<(String, Vec<u8>)>,
    /// `Content-Type` and `Location` for a fetcher that keeps no headers.
    content_type: Option<String>,
    location: Option<String>,
    pub(super) body: Vec<u8>,
    truncated: bool,
}

impl Capture {
    /// Takes the headers of `resp` (its body stays for the analysis).
    pub(super) fn of(resp: &mut FetchResponse) -> Box<Capture> {
        let content_type = resp.content_type.as_ref().map(|t| match &resp.charset {
            Some(c) => format!("{t}; charset={c}"),
            None => t.clone(),
        });
        Box::new(Capture {
            headers: std::mem::take(&mut resp.headers),
            content_type,
            location: resp.location.clone(),
            body: Vec::new(),
            truncated: resp.truncated,
        })
    }
}

/// The metadata record of a page in the WARC files: its dedup outcome, as
/// in `pages.jsonl`.
#[derive(Serialize)]
struct WarcMetadata<'a> {
    decision: &'a str,
    status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    simhash: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dup_of: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    distance: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resemblance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

/// The WARC records of page `id` (`rec`), with its body.
pub(super) fn warc_entry(
    id: PageId,
    rec: &PageRecord,
    fetched_at: SystemTime,
    server_ip: Option<std::net::IpAddr>,
    capture: Option<Box<Capture>>,
    body: Option<Vec<u8>>,
) -> crate::warc::PageEntry {
    let meta = WarcMetadata {
        decision: rec.decision.as_str(),
        status: rec.status,
        simhash: rec.simhash.as_deref(),
        dup_of: rec.dup_of.as_deref(),
        distance: rec.distance,
        resemblance: rec.resemblance,
        error: rec.error.as_deref(),
    };
    let exchange = capture.map(|c| crate::warc::Exchange {
        target_uri: rec.canonical.clone(),
        date: Some(fetched_at),
        ip: server_ip,
        status: rec.status,
        headers: c.headers,
        content_type: c.content_type,
        location: c.location,
        body: body.unwrap_or_default(),
        truncated: c.truncated,
    });
    crate::warc::PageEntry {
        page: id,
        uri: rec.canonical.clone(),
        date: Some(fetched_at),
        exchange,
        exact_duplicate: rec.decision == Decision::ExactDuplicate,
        metadata: serde_json::to_vec(&meta).unwrap_or_default(),
    }
}
