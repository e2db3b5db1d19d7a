//! The learned link scorer of a focused crawl: an online logistic
//! regression that estimates, from a URL's path words alone, the chance
//! that the page behind it is on-topic (the "apprentice" of Chakrabarti et
//! al., trained on the crawl's own page judgements, never on outside truth).
//!
//! # Model
//!
//! ```text
//! x(u)       = the distinct path words of u (hashed into 2^HASH_BITS slots), each 1 / sqrt(words)
//! p(u)       = σ(b + Σ w[i] x[i])
//! update     = on each judged page (label y = 1 on-topic, else 0):
//!              g = p − y;  b −= BIAS_RATE × g;  w[i] −= RATE / sqrt(G[i]) × g x[i],  G[i] += (g x[i])²
//! ```
//!
//! A per-slot AdaGrad step: a word seen on few pages moves fast, one seen on
//! every page settles. The bias learns the crawl's share of on-topic pages,
//! so a word that is on on-topic and off-topic pages alike (`api`, `std`)
//! keeps a weight near 0, and a long path's many neutral words do not add
//! up to a high score (a max over per-word means, the rule this replaces,
//! favoured URLs with many words: each is one more draw of a noisy mean).
//! Words that only on-topic pages had rise, and so do the not yet fetched
//! siblings and translations that share them (`sect.config-misc.html` in
//! every language of a manual).

/// Bits of the hashed word space: 2^18 slots (two `f32` each, 2 MiB, only
/// in focused crawls).
const HASH_BITS: u32 = 18;
/// AdaGrad step of the word weights.
const RATE: f32 = 0.5;
/// Step of the bias (plain SGD).
const BIAS_RATE: f32 = 0.05;
/// Added to the AdaGrad sums so that the first step of a word is `RATE / sqrt(EPSILON + g²)`.
const EPSILON: f32 = 1.0;

/// Online logistic regression over hashed URL path words (module docs).
#[derive(Debug, Clone)]
pub struct LinkScorer {
    bias: f32,
    /// Word weights, indexed by the slot of a word hash.
    w: Vec<f32>,
    /// Sums of squared gradients per slot (AdaGrad).
    g2: Vec<f32>,
}

impl Default for LinkScorer {
    fn default() -> Self {
        Self::new()
    }
}

fn slot(h: u64) -> usize {
    (crate::hash::fmix64(h) >> (64 - HASH_BITS)) as usize
}

fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

impl LinkScorer {
    /// No evidence: every URL scores 0.5 until the first update.
    pub fn new() -> Self {
        LinkScorer {
            bias: 0.0,
            w: vec![0.0; 1 << HASH_BITS],
            g2: vec![0.0; 1 << HASH_BITS],
        }
    }

    fn margin(&self, words: &[u64]) -> f32 {
        if words.is_empty() {
            return self.bias;
        }
        let x = 1.0 / (words.len() as f32).sqrt();
        self.bias + words.iter().map(|&h| self.w[slot(h)] * x).sum::<f32>()
    }

    /// The estimated chance, 0..1, that a page whose path holds `words`
    /// (hashed, distinct) is on-topic.
    pub fn predict(&self, words: &[u64]) -> f64 {
        f64::from(sigmoid(self.margin(words)))
    }

    /// Learn from one judged page: its path words and whether it is on-topic.
    pub fn update(&mut self, words: &[u64], on_topic: bool) {
        let y = if on_topic { 1.0 } else { 0.0 };
        let g = sigmoid(self.margin(words)) - y;
        if !g.is_finite() {
            return;
        }
        self.bias -= BIAS_RATE * g;
        if !words.is_empty() {
            let x = 1.0 / (words.len() as f32).sqrt();
            for &h in words {
                let i = slot(h);
                let gi = g * x;
                self.g2[i] += gi * gi;
                self.w[i] -= RATE / (EPSILON + self.g2[i]).sqrt() * gi;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::fnv1a;

    fn words(s: &str) -> Vec<u64> {
        s.split(' ').map(|w| fnv1a(w.as_bytes())).collect()
    }

    #[test]
    fn words_of_on_topic_pages_rise_and_neutral_words_stay_near_the_base_rate() {
        let mut m = LinkScorer::new();
        assert_eq!(m.predict(&words("a b")), 0.5);
        // One page in ten is on-topic: those under "regex" and one page
        // of the 200 neutral-word pages.
        for i in 0..400 {
            let on = i % 10 == 0;
            let path = if on {
                format!("library regex p{}", i % 7)
            } else {
                format!("library std api n{}", i % 50)
            };
            m.update(&words(&path), on);
        }
        let sibling = m.predict(&words("library regex p99"));
        let neutral = m.predict(&words("library std api n99"));
        let unknown = m.predict(&words("x"));
        assert!(sibling > 0.5, "{sibling}");
        assert!(neutral < 0.1, "{neutral}");
        assert!(unknown < sibling && unknown > neutral, "{unknown}");
        // Many words that say nothing do not add up to a high score.
        let long = m.predict(&words("u1 u2 u3 u4 u5 u6 u7 u8 u9 u10 u11 u12"));
        assert!(long < sibling && (long - unknown).abs() < 0.05, "{long} {unknown}");
    }

    #[test]
    fn no_words_scores_the_bias() {
        let mut m = LinkScorer::new();
        // The bias moves by BIAS_RATE × p per off-topic page.
        for _ in 0..400 {
            m.update(&[], false);
        }
        assert!(m.predict(&[]) < 0.1);
    }
}
