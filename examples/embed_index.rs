//! Embed the near-duplicate index: fingerprint documents with a
//! [`Fingerprinter`], keep them in a [`LiveIndex`], and ask which earlier
//! document each new one nearly duplicates.
//!
//! ```text
//! cargo run --release --example embed_index
//! ```

use simcrawl::{Fingerprinter, LiveIndex, Settings};

fn main() {
    let settings = Settings::default();
    let fingerprinter = Fingerprinter::new(&settings);
    // Tables for the configured k (`simhash.k`), sized by `[index]`.
    let index = LiveIndex::from_settings(&settings.index, settings.simhash.k);

    let docs = [
        "<h1>Install</h1><p>Download the archive, unpack it into a directory of your choice, and add its bin directory to your PATH so the shell finds the program.</p>",
        "<h1>Install</h1><p>Download the archive, unpack it into a directory of your choice, and add the bin directory to your PATH so the shell finds the program.</p>",
        "<h1>Changelog</h1><p>Version two reads configuration from a single file, drops the legacy flags, and reports errors with the line that caused them.</p>",
    ];
    let mut matches = Vec::new();
    for (id, html) in docs.iter().enumerate() {
        let fp = fingerprinter.html(html);
        matches.clear();
        index.query(fp, &mut matches);
        match matches.iter().min_by_key(|m| (m.distance, m.id)) {
            Some(m) => println!(
                "doc {id}: {fp:016x} near duplicate of doc {} (distance {})",
                m.id, m.distance
            ),
            None => {
                println!("doc {id}: {fp:016x} new");
                index.insert(fp, id as u64);
            }
        }
    }
}
