//! `application/x-www-form-urlencoded` bodies, decoded strictly: invalid percent-encoded
//! UTF-8 is an error (400), never silently replaced.

use percent_encoding::percent_decode;

/// The fields of a form body, in order. Repeated names keep every value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Form {
    fields: Vec<(String, String)>,
}

impl From<Vec<(String, String)>> for Form {
    /// The text fields of a multipart form, in order.
    fn from(fields: Vec<(String, String)>) -> Self {
        Self { fields }
    }
}

impl Form {
    /// Parses a urlencoded body (`+` is a space). Errors when a name or value is not UTF-8.
    pub fn parse(body: &[u8]) -> Result<Self, String> {
        let mut fields = Vec::new();
        for pair in body.split(|b| *b == b'&').filter(|p| !p.is_empty()) {
            let (name, value) = match pair.iter().position(|b| *b == b'=') {
                Some(i) => (&pair[..i], &pair[i + 1..]),
                None => (pair, &b""[..]),
            };
            fields.push((decode(name)?, decode(value)?));
        }
        Ok(Self { fields })
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name`, in order (repeated fields such as `user_ids[]`).
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.fields
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn decode(raw: &[u8]) -> Result<String, String> {
    let plus: Vec<u8> = raw
        .iter()
        .map(|b| if *b == b'+' { b' ' } else { *b })
        .collect();
    let bytes: Vec<u8> = percent_decode(&plus).collect();
    String::from_utf8(bytes).map_err(|_| "form field is not valid UTF-8".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_fields() {
        let f = Form::parse(b"message%5Bbody%5D=Hi+there%21&x=&y").unwrap();
        assert_eq!(f.get("message[body]"), Some("Hi there!"));
        assert_eq!(f.get("x"), Some(""));
        assert_eq!(f.get("y"), Some(""));
        assert_eq!(f.get("z"), None);
    }

    #[test]
    fn rejects_invalid_utf8() {
        assert!(Form::parse(b"a=%FF%FE").is_err());
        assert!(Form::parse(b"a=\xff").is_err());
    }
}
