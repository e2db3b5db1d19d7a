//! The compact binary encoding of store values (format version 1): fixed-width
//! big-endian integers, `f64` bits, and length-prefixed (LEB128) strings. Hand
//! written rather than serde so a value costs a few hundred nanoseconds and a
//! damaged value yields an error naming what was wrong, never a panic.

/// Appends encoded fields to a byte buffer.
#[derive(Default)]
pub(crate) struct Enc {
    pub(crate) buf: Vec<u8>,
}

impl Enc {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Enc {
            buf: Vec::with_capacity(n),
        }
    }
    pub(crate) fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    pub(crate) fn u16(&mut self, v: u16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub(crate) fn varint(&mut self, mut v: u64) -> &mut Self {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
        self
    }
    pub(crate) fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub(crate) fn f64(&mut self, v: f64) -> &mut Self {
        self.u64(v.to_bits())
    }
    /// Bytes as they are (the reader knows their length).
    pub(crate) fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }
    pub(crate) fn str(&mut self, s: &str) -> &mut Self {
        self.varint(s.len() as u64);
        self.buf.extend_from_slice(s.as_bytes());
        self
    }
    pub(crate) fn opt_str(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            None => self.u8(0),
            Some(s) => self.u8(1).str(s),
        }
    }
    pub(crate) fn opt_u64(&mut self, v: Option<u64>) -> &mut Self {
        match v {
            None => self.u8(0),
            Some(v) => self.u8(1).u64(v),
        }
    }
    pub(crate) fn opt_hash(&mut self, h: Option<&[u8; 32]>) -> &mut Self {
        match h {
            None => self.u8(0),
            Some(h) => {
                self.u8(1);
                self.buf.extend_from_slice(h);
                self
            }
        }
    }
}

/// Reads fields back; every read checks the remaining length.
pub(crate) struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// Why a value could not be decoded (becomes `StoreError::Corrupt`).
pub(crate) type DecResult<T> = Result<T, String>;

impl<'a> Dec<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Dec { buf, pos: 0 }
    }
    fn take(&mut self, n: usize) -> DecResult<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| {
                format!(
                    "truncated: need {n} bytes at offset {}, value has {}",
                    self.pos,
                    self.buf.len()
                )
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    pub(crate) fn u8(&mut self) -> DecResult<u8> {
        Ok(self.take(1)?[0])
    }
    /// `n` bytes as they are.
    pub(crate) fn raw(&mut self, n: usize) -> DecResult<&'a [u8]> {
        self.take(n)
    }
    pub(crate) fn u16(&mut self) -> DecResult<u16> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    pub(crate) fn varint(&mut self) -> DecResult<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }
    pub(crate) fn u64(&mut self) -> DecResult<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    pub(crate) fn u32(&mut self) -> DecResult<u32> {
        u32::try_from(self.varint()?).map_err(|_| "integer does not fit 32 bits".to_string())
    }
    pub(crate) fn f64(&mut self) -> DecResult<f64> {
        Ok(f64::from_bits(self.u64()?))
    }
    pub(crate) fn str(&mut self) -> DecResult<String> {
        let n = usize::try_from(self.varint()?).map_err(|_| "string length overflow".to_string())?;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| "string is not UTF-8".to_string())
    }
    pub(crate) fn opt_str(&mut self) -> DecResult<Option<String>> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.str()?)),
            t => Err(format!("bad option tag {t}")),
        }
    }
    pub(crate) fn opt_u64(&mut self) -> DecResult<Option<u64>> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.u64()?)),
            t => Err(format!("bad option tag {t}")),
        }
    }
    pub(crate) fn opt_hash(&mut self) -> DecResult<Option<[u8; 32]>> {
        match self.u8()? {
            0 => Ok(None),
            1 => {
                let mut h = [0u8; 32];
                h.copy_from_slice(self.take(32)?);
                Ok(Some(h))
            }
            t => Err(format!("bad option tag {t}")),
        }
    }
    /// Whether every byte was read (a record of an older format ends
    /// before the fields a newer one appends).
    pub(crate) fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }
    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    /// Error unless every byte was consumed.
    pub(crate) fn finish(&self) -> DecResult<()> {
        if self.pos == self.buf.len() {
            Ok(())
        } else {
            Err(format!("{} trailing bytes", self.buf.len() - self.pos))
        }
    }
}

/// A key rendered for error messages: printable ASCII as is, other bytes as `\xNN`.
pub(crate) fn show_key(key: &[u8]) -> String {
    let mut s = String::with_capacity(key.len());
    for &b in key {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation_is_an_error() {
        let mut e = Enc::default();
        e.u8(7)
            .varint(300)
            .u64(42)
            .f64(-1.5)
            .str("héllo")
            .opt_str(None)
            .opt_hash(Some(&[9; 32]));
        let mut d = Dec::new(&e.buf);
        assert_eq!(d.u8().unwrap(), 7);
        assert_eq!(d.varint().unwrap(), 300);
        assert_eq!(d.u64().unwrap(), 42);
        assert_eq!(d.f64().unwrap(), -1.5);
        assert_eq!(d.str().unwrap(), "héllo");
        assert_eq!(d.opt_str().unwrap(), None);
        assert_eq!(d.opt_hash().unwrap(), Some([9; 32]));
        d.finish().unwrap();
        for cut in 0..e.buf.len() {
            let mut d = Dec::new(&e.buf[..cut]);
            let r = (|| -> DecResult<()> {
                d.u8()?;
                d.varint()?;
                d.u64()?;
                d.f64()?;
                d.str()?;
                d.opt_str()?;
                d.opt_hash()?;
                Ok(())
            })();
            assert!(r.is_err(), "cut at {cut} decoded");
        }
        assert_eq!(show_key(b"s\x00a\\"), "s\\x00a\\x5c");
    }
}
