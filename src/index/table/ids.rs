//! The page ids of a sealed run, parallel to table 0 (index pipeline: filled
//! when a run is built or merged, read when a query matches): 32 bits each
//! while every id fits, 64 bits after the first that does not.

use super::huge_vec;

/// The page ids of a run, parallel to table 0: 4 bytes each while every id
/// fits in 32 bits (a crawl numbers its pages densely from 0), 8 bytes once
/// one does not. [`Ids::push`] widens on the first id that needs it.
#[derive(Debug, Clone)]
pub(crate) enum Ids {
    /// Every id < 2^32.
    Narrow(Vec<u32>),
    /// Any id.
    Wide(Vec<u64>),
}

impl Default for Ids {
    fn default() -> Ids {
        Ids::Narrow(Vec::new())
    }
}

impl PartialEq for Ids {
    fn eq(&self, other: &Ids) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Ids {
    /// Room for `cap` ids (on huge pages when large), narrow.
    pub(super) fn with_capacity(cap: usize) -> Ids {
        Ids::Narrow(huge_vec(cap))
    }

    /// Room for `cap` ids, wide from the start if `wide`.
    pub(super) fn with_width(cap: usize, wide: bool) -> Ids {
        if wide {
            Ids::Wide(huge_vec(cap))
        } else {
            Ids::with_capacity(cap)
        }
    }

    /// Whether `id` needs the wide form.
    pub(super) fn too_wide(id: u64) -> bool {
        id > u64::from(u32::MAX)
    }

    #[inline]
    pub(super) fn push(&mut self, id: u64) {
        match self {
            Ids::Narrow(v) if !Ids::too_wide(id) => v.push(id as u32),
            Ids::Narrow(v) => {
                let mut w: Vec<u64> = huge_vec(v.capacity().max(v.len() + 1));
                w.extend(v.iter().map(|&x| u64::from(x)));
                w.push(id);
                *self = Ids::Wide(w);
            }
            Ids::Wide(v) => v.push(id),
        }
    }

    /// Appends `src[range]` (`self` must be wide if `src` is).
    pub(super) fn extend_from(&mut self, src: &Ids, range: std::ops::Range<usize>) {
        match (self, src) {
            (Ids::Narrow(d), Ids::Narrow(s)) => d.extend_from_slice(&s[range]),
            (Ids::Wide(d), Ids::Wide(s)) => d.extend_from_slice(&s[range]),
            (Ids::Wide(d), Ids::Narrow(s)) => d.extend(s[range].iter().map(|&x| u64::from(x))),
            (this @ Ids::Narrow(_), Ids::Wide(s)) => {
                for &id in &s[range] {
                    this.push(id);
                }
            }
        }
    }

    /// Whether `self` is the wide form.
    pub(super) fn is_wide(&self) -> bool {
        matches!(self, Ids::Wide(_))
    }

    /// Id `j`.
    #[inline(always)]
    pub(crate) fn get(&self, j: usize) -> u64 {
        match self {
            Ids::Narrow(v) => u64::from(v[j]),
            Ids::Wide(v) => v[j],
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Ids::Narrow(v) => v.len(),
            Ids::Wide(v) => v.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let (narrow, wide) = match self {
            Ids::Narrow(v) => (&v[..], &[][..]),
            Ids::Wide(v) => (&[][..], &v[..]),
        };
        narrow.iter().map(|&x| u64::from(x)).chain(wide.iter().copied())
    }

    /// Bytes held (capacity).
    pub(super) fn bytes(&self) -> usize {
        match self {
            Ids::Narrow(v) => v.capacity() * 4,
            Ids::Wide(v) => v.capacity() * 8,
        }
    }
}
