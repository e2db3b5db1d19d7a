//! Table designs (Manku §3.1): which bit permutations and prefix lengths the
//! index keeps. A design is a set of t tables; table i permutes the 64 bits of
//! a fingerprint by π_i and groups fingerprints by the top p_i permuted bits.
//! It is *covering* for k when any two fingerprints within Hamming distance k
//! agree on the top p_i bits of π_i for at least one table i, so probing every
//! table with the query's prefix finds every neighbour.
//!
//! Construction (one level): split the free bits into r blocks, r > k; any k
//! differing bits touch at most k blocks, so for each of the C(r, k) choices of
//! r − k blocks, one table puts those blocks first. Nested designs (the paper's
//! 16 tables) repeat the split on the k remaining blocks. [`Design::for_k`] picks
//! the split sizes by Manku's recursion X(f, k, d) for an expected 2^d stored
//! fingerprints.

/// One table of a design: a permutation of the 64 bit positions and a prefix
/// length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSpec {
    /// `order[j]` is the source bit (0 = most significant) placed at output
    /// position j (0 = most significant) of the permuted fingerprint.
    order: Vec<u8>,
    /// Number of leading permuted bits a probe matches exactly.
    prefix: u32,
    /// Bits of the *original* fingerprint that form the prefix.
    prefix_mask: u64,
    /// Compiled forward moves `(src_shift, mask, dst_shift)` over LSB-based shifts.
    fwd: Vec<Move>,
    /// Compiled inverse moves.
    inv: Vec<Move>,
}

/// A run of contiguous bits moved as one: `((x >> src) & mask) << dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Move {
    src: u32,
    mask: u64,
    dst: u32,
}

impl TableSpec {
    /// A table from `order` (64 distinct source bit positions, 0 = MSB, in
    /// output order) and its prefix length. `None` if `order` is not a
    /// permutation of 0..64 or `prefix > 64`.
    pub fn new(order: Vec<u8>, prefix: u32) -> Option<TableSpec> {
        if order.len() != 64 || prefix > 64 {
            return None;
        }
        let mut seen = 0u64;
        for &b in &order {
            if b >= 64 || seen & (1u64 << b) != 0 {
                return None;
            }
            seen |= 1u64 << b;
        }
        let prefix_mask = order[..prefix as usize]
            .iter()
            .fold(0u64, |m, &b| m | (1u64 << (63 - b)));
        let fwd = compile(&order);
        let mut inverse = vec![0u8; 64];
        for (j, &b) in order.iter().enumerate() {
            inverse[b as usize] = j as u8;
        }
        let inv = compile(&inverse);
        Some(TableSpec {
            order,
            prefix,
            prefix_mask,
            fwd,
            inv,
        })
    }

    /// Prefix length p_i.
    pub fn prefix(&self) -> u32 {
        self.prefix
    }

    /// The bits of an original fingerprint that make up this table's prefix:
    /// two fingerprints share the prefix iff `(a ^ b) & prefix_mask() == 0`.
    pub fn prefix_mask(&self) -> u64 {
        self.prefix_mask
    }

    /// The source bit order (0 = most significant).
    pub fn order(&self) -> &[u8] {
        &self.order
    }

    /// π_i(x).
    #[inline]
    pub fn permute(&self, x: u64) -> u64 {
        apply(&self.fwd, x)
    }

    /// π_i⁻¹(y).
    #[inline]
    pub fn unpermute(&self, y: u64) -> u64 {
        apply(&self.inv, y)
    }
}

#[inline]
fn apply(moves: &[Move], x: u64) -> u64 {
    let mut out = 0u64;
    for m in moves {
        out |= ((x >> m.src) & m.mask) << m.dst;
    }
    out
}

/// Groups runs of consecutive source bits into single shift-and-mask moves.
fn compile(order: &[u8]) -> Vec<Move> {
    let mut moves = Vec::new();
    let mut j = 0;
    while j < order.len() {
        let start = j;
        while j + 1 < order.len() && order[j + 1] == order[j] + 1 {
            j += 1;
        }
        let len = (j - start + 1) as u32;
        // Output positions start..=j (MSB-based) hold source bits order[start]..=order[j].
        let src = 63 - order[j] as u32;
        let dst = 63 - j as u32;
        let mask = if len == 64 { u64::MAX } else { (1u64 << len) - 1 };
        moves.push(Move { src, mask, dst });
        j += 1;
    }
    moves
}

/// A set of tables covering Hamming distance k (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Design {
    tables: Vec<TableSpec>,
    /// Human-readable description, e.g. "k=3 blocks [5] (10 tables, p=25..26)".
    name: String,
}

/// The most tables [`Design::for_k`] will choose before lowering the minimum prefix.
pub const MAX_AUTO_TABLES: usize = 40;

impl Design {
    /// Builds a design from explicit tables (tests and experiments).
    pub fn from_tables(tables: Vec<TableSpec>, name: impl Into<String>) -> Design {
        Design {
            tables,
            name: name.into(),
        }
    }

    /// One of the paper's designs for f = 64, k = 3 (Example 3.1): 4 tables
    /// (p = 16), 10 tables (p = 25/26), 16 tables (p = 28, 4 × 4 nested) or 20
    /// tables (p = 31..33). `None` for any other table count.
    pub fn paper_k3(tables: usize) -> Option<Design> {
        let levels: &[usize] = match tables {
            4 => &[4],
            10 => &[5],
            16 => &[4, 4],
            20 => &[6],
            _ => return None,
        };
        Some(Design::nested(3, levels))
    }

    /// A design for distance `k` that splits the bits into `levels[0]` blocks,
    /// then the k left-over blocks of each table into `levels[1]` blocks, and
    /// so on. Each level needs `levels[i] > k`; tables = `∏ C(levels[i], k)`.
    ///
    /// # Panics
    /// If a level is not greater than k or there are too few bits to split.
    pub fn nested(k: u32, levels: &[usize]) -> Design {
        let mut tables = Vec::new();
        let all: Vec<u8> = (0..64).collect();
        build_levels(k as usize, &all, Vec::new(), levels, &mut tables);
        Design::finish(tables, format!("k={k} blocks {levels:?}"))
    }

    /// Manku's X(f, k, d) choice (§3.1.2) for an expected 2^`expected_log2`
    /// fingerprints: the fewest tables whose prefixes are all at least
    /// p_min = d − 3 bits (so a probe expects at most 8 fingerprints that
    /// share its prefix); if that needs more than [`MAX_AUTO_TABLES`] tables,
    /// p_min is lowered until it does not. k = 0 gives one table with p = 64.
    pub fn for_k(k: u32, expected_log2: u32) -> Design {
        let k = k.min(32);
        let mut pmin = expected_log2.saturating_sub(3).clamp(1, 64);
        loop {
            if let Some((t, _)) = cost(64, 0, k as usize, pmin as usize, false) {
                if t <= MAX_AUTO_TABLES || pmin <= 1 {
                    return build_min_prefix(k, pmin, false);
                }
            }
            pmin -= 1;
        }
    }

    /// The fewest tables whose prefixes are all at least d − 3 bits for an
    /// expected 2^`expected_log2` = 2^d fingerprints, group splits allowed
    /// (see [`Design::with_tables`]): the design of tables kept in a
    /// key-value store ([`crate::index::SharedIndex`]), where each table
    /// costs one command per query and one per insert, and a bucket expects
    /// at most 8 entries at the expected size. For k = 3 and d = 24: 6
    /// tables, p = 21.
    pub fn fewest_tables(k: u32, expected_log2: u32) -> Design {
        let k = k.min(32);
        let mut pmin = expected_log2.saturating_sub(3).clamp(1, 64);
        loop {
            if let Some((t, _)) = cost(64, 0, k as usize, pmin as usize, true) {
                if t <= MAX_AUTO_TABLES || pmin <= 1 {
                    return build_min_prefix(k, pmin, true);
                }
            }
            pmin -= 1;
        }
    }

    /// The design for an expected 2^`expected_log2` fingerprints with the
    /// cheapest query, the `index.design = "auto"` choice.
    ///
    /// Manku's rule ([`Design::for_k`]) keeps a probe to about 8 candidates;
    /// in memory a query's cost is instead its random reads and, much less,
    /// the entries it compares. Per table a probe makes two random reads (a
    /// directory word, the start of its bucket) and compares the bucket's
    /// entries, about max(5, 2^(d − p_i)) of them, read in sequence (the
    /// prefetchers stream them). So a design costs
    /// Σ_i (2 + c · max(5, 2^(d − p_i))) random reads, where c is the cost of
    /// comparing one entry over that of a random read (`entry_cost`). Among
    /// the designs for every minimum prefix (group splits allowed, see
    /// [`Design::with_tables`]) the cheapest wins. For k = 3 this picks 4
    /// tables (p = 16) up to 2^20 fingerprints, 6 tables (p = 21, two halves)
    /// from 2^21 to 2^27, 8 (p = 24) from 2^28, more beyond.
    pub fn fastest_for(k: u32, expected_log2: u32) -> Design {
        let k = k.min(32);
        let d = expected_log2.min(64) as i32;
        let c = entry_cost(expected_log2);
        let mut best: Option<(f64, Design)> = None;
        for pmin in 1..=64u32 {
            let Some((t, _)) = cost(64, 0, k as usize, pmin as usize, true) else {
                continue;
            };
            if t > MAX_AUTO_TABLES {
                continue;
            }
            let design = build_min_prefix(k, pmin, true);
            let reads: f64 = design
                .tables
                .iter()
                .map(|s| 2.0 + c * 2f64.powi(d - s.prefix as i32).max(5.0))
                .sum();
            // Ties go to the longer prefix (fewer candidates to compare).
            if best.as_ref().is_none_or(|(b, _)| reads <= *b) {
                best = Some((reads, design));
            }
        }
        match best {
            Some((_, design)) => design,
            None => Design::for_k(k, expected_log2),
        }
    }

    /// The design with the longest minimum prefix that needs at most
    /// `max_tables` tables (the paper's "alternately" question in §3.1.2);
    /// for k = 3 and a table count of the paper, the paper's design.
    ///
    /// Besides Manku's block splits this considers *group* splits: cut the
    /// free bits into g groups; k differences leave at most ⌊k/g⌋ in some
    /// group, so each group is covered on its own for that smaller distance.
    /// For k = 3, two halves of 32 bits each hold at most one difference in
    /// one of them, and a half split in r blocks for distance 1 gives r
    /// tables whose prefix is r − 1 of its blocks: 2r tables in all, with
    /// p = 16, 21, 24, 25.6 for 4, 6, 8, 10 tables. Manku's splits need 10
    /// tables for p ≥ 17, so 6 tables at p = 21 and 8 at p = 24 are new
    /// points between the paper's 4 and 10.
    pub fn with_tables(k: u32, max_tables: usize) -> Design {
        if k == 3 {
            if let Some(d) = Design::paper_k3(max_tables) {
                return d;
            }
        }
        let k = k.min(32);
        let mut pmin = 64;
        while pmin > 1 {
            if let Some((t, _)) = cost(64, 0, k as usize, pmin, true) {
                if t <= max_tables.max(1) {
                    break;
                }
            }
            pmin -= 1;
        }
        build_min_prefix(k, pmin as u32, true)
    }

    /// Number of tables t.
    pub fn tables(&self) -> usize {
        self.tables.len()
    }

    /// The tables.
    pub fn specs(&self) -> &[TableSpec] {
        &self.tables
    }

    /// A short description of the design.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Smallest prefix length over the tables.
    pub fn min_prefix(&self) -> u32 {
        self.tables.iter().map(|t| t.prefix).min().unwrap_or(0)
    }

    /// Largest prefix length over the tables.
    pub fn max_prefix(&self) -> u32 {
        self.tables.iter().map(|t| t.prefix).max().unwrap_or(0)
    }

    /// Whether every placement of at most `k` differing bits leaves some
    /// table's prefix untouched, i.e. no set of k bit positions hits every
    /// prefix. Decided exactly: bits are grouped into classes with the same
    /// table membership, and a depth-≤k search looks for a hitting set.
    pub fn covers(&self, k: u32) -> bool {
        if self.tables.is_empty() {
            return false;
        }
        // Class of bit b = the set of tables whose prefix contains it.
        let mut classes: Vec<u64> = Vec::new(); // representative bit masks (original bits)
        let mut member: Vec<Vec<bool>> = Vec::new();
        for b in 0..64u32 {
            let bit = 1u64 << b;
            let m: Vec<bool> = self.tables.iter().map(|t| t.prefix_mask & bit != 0).collect();
            match member.iter().position(|x| *x == m) {
                Some(i) => classes[i] |= bit,
                None => {
                    member.push(m);
                    classes.push(bit);
                }
            }
        }
        let mut hit = vec![0u32; self.tables.len()];
        !hitting_set(&member, k as usize, &mut hit)
    }

    fn finish(tables: Vec<TableSpec>, what: String) -> Design {
        let lo = tables.iter().map(|t| t.prefix).min().unwrap_or(0);
        let hi = tables.iter().map(|t| t.prefix).max().unwrap_or(0);
        let name = format!("{what} ({} tables, p={lo}..{hi})", tables.len());
        Design { tables, name }
    }
}

/// Whether some set of at most `left` classes hits every table (`hit[t] > 0`).
fn hitting_set(member: &[Vec<bool>], left: usize, hit: &mut [u32]) -> bool {
    let Some(t) = hit.iter().position(|&h| h == 0) else {
        return true;
    };
    if left == 0 {
        return false;
    }
    for m in member {
        if !m[t] {
            continue;
        }
        for (i, &inside) in m.iter().enumerate() {
            if inside {
                hit[i] += 1;
            }
        }
        let found = hitting_set(member, left - 1, hit);
        for (i, &inside) in m.iter().enumerate() {
            if inside {
                hit[i] -= 1;
            }
        }
        if found {
            return true;
        }
    }
    false
}

/// Splits `free` (ordered source bits) into `r` near-equal blocks, larger first.
fn split_bits(free: &[u8], r: usize) -> Vec<&[u8]> {
    let m = free.len();
    let (q, rem) = (m / r, m % r);
    let mut out = Vec::with_capacity(r);
    let mut at = 0;
    for i in 0..r {
        let len = q + usize::from(i < rem);
        out.push(&free[at..at + len]);
        at += len;
    }
    out
}

/// All subsets of size `c` of `0..r`, in lexicographic order.
fn combinations(r: usize, c: usize) -> Vec<Vec<usize>> {
    fn go(start: usize, r: usize, c: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == c {
            out.push(cur.clone());
            return;
        }
        for i in start..r {
            cur.push(i);
            go(i + 1, r, c, cur, out);
            cur.pop();
        }
    }
    let mut out = Vec::new();
    go(0, r, c, &mut Vec::new(), &mut out);
    out
}

/// Emits one table per way of choosing r − k of the r blocks of `free`,
/// recursing into the remaining blocks while `levels` lasts.
fn build_levels(k: usize, free: &[u8], fixed: Vec<u8>, levels: &[usize], out: &mut Vec<TableSpec>) {
    let Some((&r, rest_levels)) = levels.split_first() else {
        out.push(table_from(&fixed, free));
        return;
    };
    assert!(
        r > k && r <= free.len(),
        "a level needs k < r <= free bits (r={r}, k={k}, bits={})",
        free.len()
    );
    let blocks = split_bits(free, r);
    for chosen in combinations(r, r - k) {
        let (pre, rest) = take_blocks(&blocks, &chosen, &fixed);
        build_levels(k, &rest, pre, rest_levels, out);
    }
}

/// `fixed` followed by the `chosen` blocks (the longer prefix), and the
/// other blocks in order (still free).
fn take_blocks(blocks: &[&[u8]], chosen: &[usize], fixed: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut pre = fixed.to_vec();
    let mut rest = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        if chosen.contains(&i) {
            pre.extend_from_slice(b);
        } else {
            rest.extend_from_slice(b);
        }
    }
    (pre, rest)
}

fn table_from(prefix_bits: &[u8], rest: &[u8]) -> TableSpec {
    let mut order = prefix_bits.to_vec();
    order.extend_from_slice(rest);
    // Bits outside both lists cannot happen: callers partition 0..64.
    TableSpec::new(order, prefix_bits.len() as u32).unwrap_or_else(|| unreachable!("design bits partition 0..64"))
}

/// The cost of comparing one bucket entry, in random reads, for an index of
/// 2^`d` fingerprints ([`Design::fastest_for`]).
///
/// Fitted to `simcrawl bench index` (docs/index.md, "Measured"): with 4, 6,
/// 8 and 10 tables at 1M, 10M and 100M fingerprints, the batched one-thread
/// query time was 2t random reads plus 1.3 ns per entry compared, within 5%
/// for all nine (size, design) pairs, with a random read costing 23 ns at 1M, 38 ns at 10M
/// and 87 ns at 100M (caches, then the TLB, stop covering the tables):
/// about 23 ns · 2^(0.29 (d − 20)). Outside 2^20..=2^27 the nearest end
/// is used rather than extrapolating.
fn entry_cost(d: u32) -> f64 {
    let d = f64::from(d.clamp(20, 27));
    let random_read_ns = 23.0 * (0.29 * (d - 20.0)).exp2();
    1.3 / random_read_ns
}

/// How [`cost`] splits the free bits at one level of a design.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Split {
    /// The prefix is long enough: one table, the free bits go to its tail.
    Leaf,
    /// Manku's split: `r` blocks, one table per choice of r − k of them as
    /// more prefix, then the k left-over blocks split again with the same k.
    Blocks(usize),
    /// `g` groups: k differences leave some group with at most ⌊k/g⌋ of
    /// them, so each group is split again, on its own, for distance ⌊k/g⌋
    /// (the other groups' bits go to the tables' tails). For k = 3 and two
    /// halves this gives 6 tables with p = 21 where Manku's split needs 10
    /// for p = 25 and 4 give p = 16.
    Groups(usize),
}

/// Memo of [`cost`]: `(free bits, fixed bits, k)` to the best count and split.
type Memo = std::collections::HashMap<(usize, usize, usize), Option<(usize, Split)>>;

/// Worst-case table count and best split for `m` free bits of which `s` are
/// already fixed, to reach prefixes of at least `pmin` at distance `k`
/// (Manku's X(f, k, d) with τ = d − p_min, plus group splits when `groups`).
/// `None` if unreachable.
fn cost(m: usize, s: usize, k: usize, pmin: usize, groups: bool) -> Option<(usize, Split)> {
    let mut memo = Memo::new();
    cost_memo(m, s, k, pmin, groups, &mut memo)
}

fn cost_memo(m: usize, s: usize, k: usize, pmin: usize, groups: bool, memo: &mut Memo) -> Option<(usize, Split)> {
    if let Some(&v) = memo.get(&(m, s, k)) {
        return v;
    }
    let v = cost_uncached(m, s, k, pmin, groups, memo);
    memo.insert((m, s, k), v);
    v
}

fn cost_uncached(m: usize, s: usize, k: usize, pmin: usize, groups: bool, memo: &mut Memo) -> Option<(usize, Split)> {
    if s >= pmin {
        return Some((1, Split::Leaf));
    }
    let mut best: Option<(usize, Split)> = None;
    for r in (k + 1)..=m.min(k + 12) {
        let ways = binomial(r, k);
        if ways > 4096 {
            break;
        }
        let q = m / r;
        let rem = m % r;
        // The r − k smallest blocks: sizes q (r − rem of them) then q + 1.
        let small = r - rem;
        let take = r - k;
        let gain = if take <= small {
            take * q
        } else {
            small * q + (take - small) * (q + 1)
        };
        if gain == 0 {
            continue;
        }
        if let Some((sub, _)) = cost_memo(m - gain, s + gain, k, pmin, groups, memo) {
            let total = ways.saturating_mul(sub);
            if best.is_none_or(|(b, _)| total < b) {
                best = Some((total, Split::Blocks(r)));
            }
        }
    }
    if groups && k > 0 {
        // g = k + 1 groups with ⌊k/g⌋ = 0 is Manku's r = k + 1 split again.
        for g in 2..=k.min(m) {
            let (q, rem) = (m / g, m % g);
            let kk = k / g;
            let small = cost_memo(q, s, kk, pmin, groups, memo).map(|c| c.0);
            let large = if rem > 0 {
                cost_memo(q + 1, s, kk, pmin, groups, memo).map(|c| c.0)
            } else {
                Some(0)
            };
            if let (Some(a), Some(b)) = (small, large) {
                let total = a.saturating_mul(g - rem).saturating_add(b.saturating_mul(rem));
                if best.is_none_or(|(t, _)| total < t) {
                    best = Some((total, Split::Groups(g)));
                }
            }
        }
    }
    best
}

fn binomial(n: usize, k: usize) -> usize {
    let k = k.min(n - k.min(n));
    let mut acc: usize = 1;
    for i in 0..k {
        acc = acc.saturating_mul(n - i) / (i + 1);
    }
    acc
}

/// Builds, level by level, the split chosen by [`cost`] for the actual sizes.
fn build_min_prefix(k: u32, pmin: u32, groups: bool) -> Design {
    struct Build {
        pmin: usize,
        groups: bool,
        out: Vec<TableSpec>,
        /// The splits along the first table's path, for the design's name.
        path: Vec<String>,
    }
    fn go(b: &mut Build, k: usize, free: &[u8], fixed: Vec<u8>, tail: Vec<u8>, first: bool) {
        let split = cost(free.len(), fixed.len(), k, b.pmin, b.groups).map_or(Split::Leaf, |c| c.1);
        match split {
            Split::Leaf | Split::Blocks(0) | Split::Groups(0) => {
                let mut rest = free.to_vec();
                rest.extend_from_slice(&tail);
                b.out.push(table_from(&fixed, &rest));
            }
            Split::Blocks(r) => {
                if first {
                    b.path.push(format!("{r} blocks"));
                }
                let blocks = split_bits(free, r);
                for (n, chosen) in combinations(r, r - k).into_iter().enumerate() {
                    let (pre, rest) = take_blocks(&blocks, &chosen, &fixed);
                    go(b, k, &rest, pre, tail.clone(), first && n == 0);
                }
            }
            Split::Groups(g) => {
                if first {
                    b.path.push(format!("{g} groups (k={})", k / g));
                }
                let parts = split_bits(free, g);
                for (j, part) in parts.iter().enumerate() {
                    let mut t = tail.clone();
                    for (i, other) in parts.iter().enumerate() {
                        if i != j {
                            t.extend_from_slice(other);
                        }
                    }
                    go(b, k / g, part, fixed.clone(), t, first && j == 0);
                }
            }
        }
    }
    let mut b = Build {
        pmin: pmin as usize,
        groups,
        out: Vec::new(),
        path: Vec::new(),
    };
    let all: Vec<u8> = (0..64).collect();
    go(&mut b, k as usize, &all, Vec::new(), Vec::new(), true);
    let what = if b.path.is_empty() {
        "one block".to_string()
    } else {
        b.path.join(", ")
    };
    Design::finish(b.out, format!("k={k} p_min={pmin}: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_designs_have_the_papers_sizes() {
        for (t, lo, hi) in [(4, 16, 16), (10, 25, 26), (16, 28, 28), (20, 31, 33)] {
            let d = Design::paper_k3(t).expect("paper design");
            assert_eq!(d.tables(), t);
            assert_eq!((d.min_prefix(), d.max_prefix()), (lo, hi), "{}", d.name());
            assert!(d.covers(3), "{}", d.name());
            assert!(!d.covers(4), "{} should not cover k=4", d.name());
        }
        assert!(Design::paper_k3(7).is_none());
    }

    #[test]
    fn permutations_round_trip() {
        let d = Design::paper_k3(16).unwrap();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..1000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            for t in d.specs() {
                let y = t.permute(x);
                assert_eq!(t.unpermute(y), x);
                assert_eq!(y.count_ones(), x.count_ones());
                // Sharing the permuted prefix is sharing the masked original bits.
                let p = t.prefix();
                let z = x.rotate_left(13) ^ x;
                let same_orig = (x ^ z) & t.prefix_mask() == 0;
                let same_perm = p == 0 || (t.permute(x) ^ t.permute(z)) >> (64 - p) == 0;
                assert_eq!(same_orig, same_perm);
                let w = x ^ (z & !t.prefix_mask());
                assert!(p == 0 || (t.permute(x) ^ t.permute(w)) >> (64 - p) == 0);
            }
        }
    }

    #[test]
    fn auto_designs_cover_every_k() {
        for k in 0..=7 {
            for d in [10, 20, 24, 30, 34] {
                let des = Design::for_k(k, d);
                assert!(des.tables() <= MAX_AUTO_TABLES, "{}", des.name());
                assert!(des.covers(k), "k={k} d={d}: {}", des.name());
            }
        }
        assert_eq!(Design::for_k(0, 24).tables(), 1);
        assert_eq!(Design::for_k(3, 24).tables(), 10);
        assert_eq!(Design::for_k(3, 16).tables(), 4);
        assert_eq!(Design::for_k(3, 34).tables(), 20);
    }

    #[test]
    fn fastest_designs_cover_every_k_and_follow_the_line_count() {
        for k in 0..=7 {
            for d in [10, 16, 20, 24, 30, 34] {
                let des = Design::fastest_for(k, d);
                assert!(des.tables() <= MAX_AUTO_TABLES, "{}", des.name());
                assert!(des.covers(k), "k={k} d={d}: {}", des.name());
            }
        }
        assert_eq!(Design::fastest_for(0, 24).tables(), 1);
        // 16 candidates per probe in 4 tables read fewer lines than 10 tables.
        assert_eq!(Design::fastest_for(3, 20).tables(), 4);
        assert_eq!(Design::for_k(3, 20).tables(), 10);
        // Then the two-halves designs: 6 tables (p = 21), 8 (p = 24).
        for (d, t, p) in [(21, 6, 21), (24, 6, 21), (27, 6, 21), (28, 8, 24), (30, 8, 24)] {
            let des = Design::fastest_for(3, d);
            assert_eq!((des.tables(), des.min_prefix()), (t, p), "d={d}: {}", des.name());
        }
        assert!(Design::fastest_for(3, 34).min_prefix() >= 31);
        // The entry cost falls as random reads get dearer, within the fit.
        assert!(entry_cost(20) > entry_cost(24) && entry_cost(24) > entry_cost(27));
        assert_eq!(entry_cost(10), entry_cost(20));
        assert_eq!(entry_cost(40), entry_cost(27));
    }

    #[test]
    fn with_tables_respects_the_budget() {
        for k in 1..=7 {
            for t in [1, 4, 8, 16, 30] {
                let d = Design::with_tables(k, t);
                assert!(d.tables() <= t.max(k as usize + 1), "{}", d.name());
                assert!(d.covers(k), "{}", d.name());
            }
        }
    }

    #[test]
    fn covers_detects_a_broken_design() {
        let d = Design::paper_k3(10).unwrap();
        let broken = Design::from_tables(d.specs()[..9].to_vec(), "nine of ten");
        assert!(!broken.covers(3));
        assert!(broken.covers(2));
    }

    #[test]
    fn covering_matches_brute_force_on_random_placements() {
        // For each placement of 3 differing bits, some table's prefix is untouched.
        let d = Design::paper_k3(20).unwrap();
        for a in 0..64 {
            for b in a + 1..64 {
                for c in b + 1..64 {
                    let x = (1u64 << a) | (1u64 << b) | (1u64 << c);
                    assert!(d.specs().iter().any(|t| x & t.prefix_mask() == 0), "{a} {b} {c}");
                }
            }
        }
    }

    #[test]
    fn two_halves_designs_cover_three_with_fewer_tables() {
        for (t, lo, hi) in [(6, 21, 22), (8, 24, 24), (12, 26, 27)] {
            let d = Design::with_tables(3, t);
            assert_eq!(d.tables(), t, "{}", d.name());
            assert_eq!((d.min_prefix(), d.max_prefix()), (lo, hi), "{}", d.name());
            assert!(d.covers(3), "{}", d.name());
            assert!(!d.covers(4), "{} should not cover k=4", d.name());
            // The exact decision agrees with every placement of 3 bits.
            for a in 0..64 {
                for b in a + 1..64 {
                    for c in b + 1..64 {
                        let x = (1u64 << a) | (1u64 << b) | (1u64 << c);
                        assert!(d.specs().iter().any(|s| x & s.prefix_mask() == 0), "{a} {b} {c}");
                    }
                }
            }
        }
        // A missing table breaks the cover.
        let six = Design::with_tables(3, 6);
        for skip in 0..6 {
            let mut specs = six.specs().to_vec();
            specs.remove(skip);
            assert!(!Design::from_tables(specs, "five of six").covers(3));
        }
        // Group splits are used for other k too, and stay covering.
        for k in 1..=7 {
            for t in [6, 8, 12, 24] {
                let d = Design::with_tables(k, t);
                assert!(d.covers(k), "k={k} t={t}: {}", d.name());
            }
        }
    }
}
