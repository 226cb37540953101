//! The part of Ruby's `Marshal` format (version 4.8) that Active Storage's signed messages
//! carry: `nil`, booleans, integers, UTF-8 strings, symbols, arrays and hashes.
//!
//! Rails 6.1 and older apps (and 7.1+ apps whose message serializer allows Marshal, the
//! `:json_allow_marshal` default of `load_defaults 7.1`) serialize the values inside
//! `ActiveStorage.verifier`'s tokens with Marshal: a blob's id in its signed id, a hash such as
//! `{key:, disposition:, content_type:, service_name:}` in a disk service URL, the
//! transformations `{resize_to_limit: [1200, 800]}` in a variation key. [`dump`] writes exactly
//! the bytes `Marshal.dump` writes for such values (a variant record's `variation_digest` is
//! the SHA1 of them), and [`load`] reads them back.
//!
//! Source: Ruby's `marshal.c` (`w_object`, `w_long`, `r_object`).

/// A Ruby value of the kinds listed in the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// `nil`.
    Nil,
    /// `true` or `false`.
    Bool(bool),
    /// An Integer (Fixnum or Bignum within `i64`).
    Int(i64),
    /// A String, written with the UTF-8 encoding ivar (`E: true`).
    Str(String),
    /// A Symbol.
    Sym(String),
    /// An Array.
    Array(Vec<Self>),
    /// A Hash, pairs in insertion order.
    Hash(Vec<(Self, Self)>),
}

impl Value {
    /// The value of symbol (or string) key `name` of a hash.
    pub fn get(&self, name: &str) -> Option<&Self> {
        match self {
            Self::Hash(pairs) => pairs.iter().find_map(|(k, v)| match k {
                Self::Sym(s) | Self::Str(s) if s == name => Some(v),
                _ => None,
            }),
            _ => None,
        }
    }

    /// The text of a string or symbol.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(s) | Self::Sym(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Self::Int(n) => Some(*n),
            _ => None,
        }
    }
}

/// `Marshal.dump(value)`: `\x04\x08` and the value, with Ruby's symbol links for repeated
/// symbols.
pub fn dump(value: &Value) -> Vec<u8> {
    let mut out = vec![4, 8];
    let mut symbols: Vec<String> = Vec::new();
    write_value(&mut out, value, &mut symbols);
    out
}

fn write_long(out: &mut Vec<u8>, n: i64) {
    if n == 0 {
        out.push(0);
    } else if 0 < n && n < 123 {
        out.push((n + 5) as u8);
    } else if -124 < n && n < 0 {
        out.push(((n - 5) & 0xff) as u8);
    } else {
        let mut buf = [0u8; 8];
        let mut len = 0;
        let mut x = n;
        for slot in &mut buf {
            *slot = (x & 0xff) as u8;
            x >>= 8;
            len += 1;
            if (n >= 0 && x == 0) || (n < 0 && x == -1) {
                break;
            }
        }
        out.push(if n >= 0 {
            len as u8
        } else {
            (-(len as i8)) as u8
        });
        out.extend_from_slice(&buf[..len]);
    }
}

fn write_symbol(out: &mut Vec<u8>, name: &str, symbols: &mut Vec<String>) {
    if let Some(i) = symbols.iter().position(|s| s == name) {
        out.push(b';');
        write_long(out, i as i64);
    } else {
        out.push(b':');
        write_long(out, name.len() as i64);
        out.extend_from_slice(name.as_bytes());
        symbols.push(name.to_owned());
    }
}

/// Fixnums on 64-bit Ruby are written as `i` only within 31 bits (`marshal.c`'s `w_object`
/// checks `RSHIFT(num, 31)`); larger ones as a Bignum.
const FIXNUM_MAX: i64 = (1 << 30) - 1;
const FIXNUM_MIN: i64 = -(1 << 30);

fn write_value(out: &mut Vec<u8>, value: &Value, symbols: &mut Vec<String>) {
    match value {
        Value::Nil => out.push(b'0'),
        Value::Bool(true) => out.push(b'T'),
        Value::Bool(false) => out.push(b'F'),
        Value::Int(n) if (FIXNUM_MIN..=FIXNUM_MAX).contains(n) => {
            out.push(b'i');
            write_long(out, *n);
        }
        Value::Int(n) => {
            out.push(b'l');
            out.push(if *n < 0 { b'-' } else { b'+' });
            let mut magnitude = n.unsigned_abs().to_le_bytes().to_vec();
            while magnitude.last() == Some(&0) {
                magnitude.pop();
            }
            if magnitude.len() % 2 == 1 {
                magnitude.push(0);
            }
            write_long(out, (magnitude.len() / 2) as i64);
            out.extend_from_slice(&magnitude);
        }
        Value::Str(s) => {
            out.extend_from_slice(b"I\"");
            write_long(out, s.len() as i64);
            out.extend_from_slice(s.as_bytes());
            write_long(out, 1);
            write_symbol(out, "E", symbols);
            out.push(b'T');
        }
        Value::Sym(s) => write_symbol(out, s, symbols),
        Value::Array(items) => {
            out.push(b'[');
            write_long(out, items.len() as i64);
            for item in items {
                write_value(out, item, symbols);
            }
        }
        Value::Hash(pairs) => {
            out.push(b'{');
            write_long(out, pairs.len() as i64);
            for (k, v) in pairs {
                write_value(out, k, symbols);
                write_value(out, v, symbols);
            }
        }
    }
}

/// `Marshal.load(bytes)` for the kinds of [`Value`]; `None` for anything else (floats,
/// objects, user classes), a wrong version header, trailing bytes or truncation. Never panics.
/// Strings whose bytes are not UTF-8 are refused.
pub fn load(bytes: &[u8]) -> Option<Value> {
    let rest = bytes.strip_prefix(&[4, 8])?;
    let mut reader = Reader {
        bytes: rest,
        at: 0,
        symbols: Vec::new(),
        objects: Vec::new(),
        depth: 0,
    };
    let value = reader.value()?;
    (reader.at == reader.bytes.len()).then_some(value)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    symbols: Vec<String>,
    objects: Vec<Value>,
    depth: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n)?;
        let slice = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }

    fn long(&mut self) -> Option<i64> {
        let c = self.byte()? as i8;
        Some(match c {
            0 => 0,
            5..=127 => i64::from(c) - 5,
            -128..=-5 => i64::from(c) + 5,
            1..=4 => {
                let mut n: i64 = 0;
                for i in 0..c as u32 {
                    n |= i64::from(self.byte()?) << (8 * i);
                }
                n
            }
            _ => {
                let len = (-c) as u32;
                let mut n: i64 = -1;
                for i in 0..len {
                    n &= !(0xff << (8 * i));
                    n |= i64::from(self.byte()?) << (8 * i);
                }
                n
            }
        })
    }

    fn count(&mut self) -> Option<usize> {
        let n = usize::try_from(self.long()?).ok()?;
        // Every element takes at least one byte: a count beyond the input is a lie.
        (n <= self.bytes.len() - self.at).then_some(n)
    }

    fn symbol_body(&mut self) -> Option<String> {
        let len = self.count()?;
        let name = String::from_utf8(self.take(len)?.to_vec()).ok()?;
        self.symbols.push(name.clone());
        Some(name)
    }

    fn symbol(&mut self) -> Option<String> {
        match self.byte()? {
            b':' => self.symbol_body(),
            b';' => {
                let i = usize::try_from(self.long()?).ok()?;
                self.symbols.get(i).cloned()
            }
            _ => None,
        }
    }

    fn value(&mut self) -> Option<Value> {
        self.depth += 1;
        if self.depth > 64 {
            return None;
        }
        let value = self.value_inner();
        self.depth -= 1;
        value
    }

    fn value_inner(&mut self) -> Option<Value> {
        Some(match self.byte()? {
            b'0' => Value::Nil,
            b'T' => Value::Bool(true),
            b'F' => Value::Bool(false),
            b'i' => Value::Int(self.long()?),
            b'l' => {
                let sign = self.byte()?;
                let shorts = self.count()?;
                let bytes = self.take(shorts.checked_mul(2)?)?;
                if bytes.len() > 8 && bytes[8..].iter().any(|&b| b != 0) {
                    return None;
                }
                let mut magnitude: u64 = 0;
                for (i, b) in bytes.iter().take(8).enumerate() {
                    magnitude |= u64::from(*b) << (8 * i);
                }
                let n = i64::try_from(magnitude).ok()?;
                let value = Value::Int(if sign == b'-' { -n } else { n });
                self.objects.push(value.clone());
                value
            }
            b'"' => {
                let len = self.count()?;
                let text = String::from_utf8(self.take(len)?.to_vec()).ok()?;
                let value = Value::Str(text);
                self.objects.push(value.clone());
                value
            }
            b'I' => {
                let inner = self.value()?;
                let ivars = self.count()?;
                for _ in 0..ivars {
                    self.symbol()?;
                    self.value()?;
                }
                inner
            }
            b':' => Value::Sym(self.symbol_body()?),
            b';' => {
                let i = usize::try_from(self.long()?).ok()?;
                Value::Sym(self.symbols.get(i)?.clone())
            }
            b'[' => {
                let slot = self.objects.len();
                self.objects.push(Value::Nil);
                let n = self.count()?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value()?);
                }
                let value = Value::Array(items);
                self.objects[slot] = value.clone();
                value
            }
            b'{' => {
                let slot = self.objects.len();
                self.objects.push(Value::Nil);
                let n = self.count()?;
                let mut pairs = Vec::with_capacity(n);
                for _ in 0..n {
                    let k = self.value()?;
                    let v = self.value()?;
                    pairs.push((k, v));
                }
                let value = Value::Hash(pairs);
                self.objects[slot] = value.clone();
                value
            }
            b'@' => {
                let i = usize::try_from(self.long()?).ok()?;
                self.objects.get(i)?.clone()
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_as_ruby_writes_them() {
        // Marshal.dump(n).bytes in Ruby 3.1.
        assert_eq!(dump(&Value::Int(0)), b"\x04\x08i\x00");
        assert_eq!(dump(&Value::Int(6)), b"\x04\x08i\x0b");
        assert_eq!(dump(&Value::Int(122)), b"\x04\x08i\x7f");
        assert_eq!(dump(&Value::Int(123)), b"\x04\x08i\x01\x7b");
        assert_eq!(dump(&Value::Int(1200)), b"\x04\x08i\x02\xb0\x04");
        assert_eq!(dump(&Value::Int(-1)), b"\x04\x08i\xfa");
        assert_eq!(dump(&Value::Int(-200)), b"\x04\x08i\xff\x38");
        assert_eq!(
            dump(&Value::Int(1 << 40)),
            b"\x04\x08l+\x08\x00\x00\x00\x00\x00\x01"
        );
        for n in [
            0,
            1,
            122,
            123,
            255,
            256,
            65_535,
            65_536,
            -1,
            -123,
            -124,
            -256,
            -257,
            1 << 29,
            FIXNUM_MAX,
            FIXNUM_MIN,
            1 << 31,
            -(1 << 40),
            i64::MAX,
        ] {
            assert_eq!(load(&dump(&Value::Int(n))), Some(Value::Int(n)), "{n}");
        }
    }

    #[test]
    fn hashes_strings_and_symbol_links() {
        let v = Value::Hash(vec![
            (Value::Sym("key".into()), Value::Str("abc".into())),
            (
                Value::Sym("content_type".into()),
                Value::Str("image/png".into()),
            ),
            (Value::Sym("n".into()), Value::Nil),
        ]);
        let bytes = dump(&v);
        // The second string's encoding ivar refers to :E by a symbol link.
        assert_eq!(
            bytes,
            b"\x04\x08{\x08:\x08keyI\"\x08abc\x06:\x06ET:\x11content_typeI\"\x0eimage/png\x06;\x06T:\x06n0"
        );
        assert_eq!(load(&bytes), Some(v));
        let variation = Value::Hash(vec![(
            Value::Sym("resize_to_limit".into()),
            Value::Array(vec![Value::Int(1200), Value::Int(800)]),
        )]);
        assert_eq!(
            dump(&variation),
            b"\x04\x08{\x06:\x14resize_to_limit[\x07i\x02\xb0\x04i\x02\x20\x03"
        );
    }

    #[test]
    fn hostile_input_is_refused() {
        for bytes in [
            &b""[..],
            b"\x04\x07i\x00",
            b"\x04\x08",
            b"\x04\x08[\x7f",
            b"\x04\x08\"\x7fab",
            b"\x04\x08i\x00\x00",
            b"\x04\x08;\x00",
            b"\x04\x08@\x05",
            b"\x04\x08f\x061",
            b"\x04\x08l+\x7f",
        ] {
            assert_eq!(load(bytes), None, "{bytes:?}");
        }
        let deep = [b"\x04\x08".as_slice(), &[b'['; 200], &[6; 200]].concat();
        assert_eq!(load(&deep), None);
    }
}
