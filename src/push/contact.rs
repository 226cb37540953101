//! The contact in the VAPID token's `sub` claim: a `mailto:` or `https:` URI at which the push
//! service can reach the server's operator (RFC 8292 §2.1).
//!
//! Apple's push service (`web.push.apple.com`) refuses a token whose contact is not public —
//! `mailto:…@localhost`, or a reserved name such as `.local` or `.invalid` — with 403
//! `{"reason":"BadJwtToken"}`, while other push services accept it, so such a contact fails on
//! Safari and iOS alone (web-push-libs/web-push#947 and #988; web-push-libs/pywebpush#175 quotes
//! Apple's list of the token's requirements). Hence:
//!
//! - `--vapid-subject` given: it must be a public contact ([`check`]), or the server does not
//!   start.
//! - not given (the default): the contact is the e-mail address of the account's first active
//!   administrator (lowest id) whose address is at a public domain ([`of_address`]), looked up
//!   for each message's pushes; with none, no push is sent and the log says to set
//!   `--vapid-subject`.

use std::net::IpAddr;

/// The flag that sets the contact, as messages name it.
pub const FLAG: &str = "--vapid-subject (VAPID_SUBJECT)";

/// Why a given contact is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadContact {
    /// Not a `mailto:` address or an `https:` URL.
    #[error("{FLAG} must be a mailto: address or an https: URL, not {0:?}")]
    NotAContact(String),
    /// A `mailto:` or `https:` contact at a host that is not a public domain name.
    #[error(
        "{FLAG} {0:?} is not at a public domain name: Apple's push service refuses such a \
         contact (403 BadJwtToken); give a mailto: address or https: URL on the public internet"
    )]
    NotPublic(String),
}

/// Checks a contact: `mailto:<local>@<domain>` (one address, no header fields) or
/// `https://<host>…`, the domain or host a [public domain name](is_public_domain).
///
/// # Errors
/// [`BadContact::NotAContact`] for another scheme or a malformed address;
/// [`BadContact::NotPublic`] for a host that is no public domain name.
pub fn check(subject: &str) -> Result<(), BadContact> {
    let not_a_contact = || BadContact::NotAContact(subject.to_owned());
    let host = if let Some(address) = subject.strip_prefix("mailto:") {
        let (local, domain) = address.rsplit_once('@').ok_or_else(not_a_contact)?;
        let plain = |s: &str| {
            !s.is_empty()
                && !s.chars().any(|c| {
                    c.is_whitespace() || c.is_control() || matches!(c, ',' | '?' | '<' | '>')
                })
        };
        if !plain(local) || !plain(domain) {
            return Err(not_a_contact());
        }
        domain.to_owned()
    } else if subject.starts_with("https://") {
        let uri: http::Uri = subject.parse().map_err(|_| not_a_contact())?;
        uri.host().ok_or_else(not_a_contact)?.to_owned()
    } else {
        return Err(not_a_contact());
    };
    if is_public_domain(&host) {
        Ok(())
    } else {
        Err(BadContact::NotPublic(subject.to_owned()))
    }
}

/// `mailto:<address>` when that is a public contact ([`check`]); `None` otherwise.
pub fn of_address(address: &str) -> Option<String> {
    let subject = format!("mailto:{}", address.trim());
    check(&subject).is_ok().then_some(subject)
}

/// Top-level names that are never public: reserved by RFC 2606 and RFC 6761 (`localhost`,
/// `invalid`, `test`, `example`), multicast DNS (`local`, RFC 6762), and the private-use names
/// that local networks commonly use (`internal`, `lan`, `home`, `corp`, `localdomain`,
/// `intranet`, `private`, and `arpa`, whose `home.arpa` is RFC 8375's).
const NOT_PUBLIC_TOP: [&str; 12] = [
    "localhost",
    "invalid",
    "test",
    "example",
    "local",
    "internal",
    "lan",
    "home",
    "corp",
    "localdomain",
    "intranet",
    "private",
];

/// Whether `host` is a domain name on the public internet, by its form: at least two labels
/// of letters, digits and inner hyphens (at most 63 bytes each), a top-level label that is not
/// all digits and not one of `NOT_PUBLIC_TOP` or `arpa`, and no IP address literal.
pub fn is_public_domain(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host).to_lowercase();
    if host.len() > 253 || host.parse::<IpAddr>().is_ok() || host.starts_with('[') {
        return false;
    }
    let labels: Vec<&str> = host.split('.').collect();
    let Some(top) = labels.last() else {
        return false;
    };
    labels.len() >= 2
        && labels.iter().all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
        && !top.chars().all(|c| c.is_ascii_digit())
        && *top != "arpa"
        && !NOT_PUBLIC_TOP.contains(top)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_contacts_pass_and_local_ones_are_named() {
        for good in [
            "mailto:ops@example.com",
            "mailto:David.Heinemeier@Hey.COM",
            "https://chat.example.org",
            "https://chat.example.org:8443/contact",
            "mailto:ops@xn--bcher-kva.ch",
        ] {
            assert_eq!(check(good), Ok(()), "{good}");
        }
        for local in [
            "mailto:hearth@localhost",
            "mailto:relay@herdr.local",
            "mailto:security@gateway.invalid",
            "mailto:me@printer.lan",
            "mailto:me@box.home.arpa",
            "mailto:root@127.0.0.1",
            "mailto:root@[::1]",
            "https://localhost",
            "https://10.0.0.1/",
            "mailto:me@intranet",
            "mailto:me@host.123",
        ] {
            assert_eq!(
                check(local),
                Err(BadContact::NotPublic(local.into())),
                "{local}"
            );
        }
        for junk in [
            "",
            "hearth@example.com",
            "http://example.com",
            "mailto:",
            "mailto:@example.com",
            "mailto:a@example.com,b@example.com",
            "mailto:a@example.com?subject=hi",
            "mailto:a b@example.com",
        ] {
            assert_eq!(
                check(junk),
                Err(BadContact::NotAContact(junk.into())),
                "{junk}"
            );
        }
    }

    #[test]
    fn an_address_becomes_a_mailto_contact_only_when_public() {
        assert_eq!(
            of_address("david@example.com").as_deref(),
            Some("mailto:david@example.com")
        );
        assert_eq!(of_address("david@localhost"), None);
        assert_eq!(of_address("not an address"), None);
    }
}
