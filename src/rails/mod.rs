//! What Rails defines and Hearth must match, byte for byte.
//!
//! Hearth serves clients written for Rails (`@rails/actioncable`, Turbo) and shares secrets
//! and cookies with Rails applications, so a few Rails formats have to be reproduced exactly.
//! Each file mirrors one piece of Rails and names the Rails source it follows:
//!
//! - [`key_generator`]: `ActiveSupport::KeyGenerator`. Every secret is PBKDF2 over
//!   `secret_key_base` with a per-purpose salt, 1000 iterations, 64 bytes; SHA256 or SHA1
//!   depending on the app's defaults.
//! - [`message_verifier`]: `ActiveSupport::MessageVerifier` tokens,
//!   `base64(data)--hex(HMAC(base64(data)))`, verified with Rails 7.1+'s rules; and
//!   [`StreamNameSigner`], Turbo's signed stream names (`turbo_stream_from` on the page,
//!   `Turbo::StreamsChannel` on the cable).
//! - [`signed_id`]: Active Record's `signed_id` / `find_signed`, the signed, expiring record
//!   ids of links such as Campfire's transfer link.
//! - [`signed_cookie`]: `cookies.signed`, a verifier token around a metadata envelope that
//!   binds the value to the cookie name and an expiry, written as Rails 8.2 writes it (HMAC-SHA1,
//!   the `message` envelope) so a Campfire and Hearth read each other's session cookies; reads
//!   the Rails 7.1+ `data` envelope and Hearth's earlier HMAC-SHA256 cookies too.
//! - [`time`]: Ruby's ISO 8601 forms (`Time#iso8601`, `Time.iso8601`), the cookie expiry's
//!   format and the times on a page.
//! - [`global_id`]: `gid://app/Model/id` and its URL-safe base64 param, the form in which
//!   records appear in stream names and connection identifiers.
//! - [`active_storage`]: `ActiveStorage.verifier`'s signed blob ids, variation keys and disk
//!   service tokens, over the subset of Ruby's Marshal in [`marshal`].
//! - [`signed_global_id`]: signed GlobalIDs (`sgid`), how Action Text names an attachment's
//!   record (a mentioned user) in a message body, byte for byte as Campfire signs them.
//! - [`keys`]: every verifier a server derives from `secret_key_base`, built once and
//!   cloned into the handlers that sign or verify.
//! - [`json`]: ActiveSupport::JSON's string escaping (`<` `>` `&` and U+2028/U+2029 as
//!   `\uXXXX`), which decides the exact bytes of every Action Cable frame.
//!
//! Everything here is pure computation: no I/O, no clock except in
//! [`SignedCookieJar::verify`], and no input panics. Verification functions return `Option`
//! and say nothing about why a token failed, as Rails' `verified` does.
//!
//! ```
//! use hearth::rails::{to_gid_param, StreamNameSigner};
//!
//! let signer = StreamNameSigner::from_raw_key(b"s3Krit");
//! let name = format!("{}:messages", to_gid_param("my-app", "Room", 1));
//! assert_eq!(name, "Z2lkOi8vbXktYXBwL1Jvb20vMQ:messages");
//! let signed = signer.sign(&name);
//! assert_eq!(signer.verify(&signed), Some(name));
//! ```

pub mod active_storage;
pub mod global_id;
pub mod json;
pub mod key_generator;
pub mod keys;
pub mod marshal;
pub mod message_verifier;
pub mod signed_cookie;
pub mod signed_global_id;
pub mod signed_id;
pub mod time;
pub mod token_for;

pub use active_storage::ActiveStorageVerifier;
pub use global_id::{gid, parse_gid_param, to_gid_param};
pub use json::{encode_value, json_string, write_json_string, JsonEscaping};
pub use key_generator::{generate_key, KdfDigest, UnknownKdfDigest, ITERATIONS};
pub use keys::Keys;
pub use message_verifier::{MacDigest, MessageVerifier, StreamNameSigner, UnknownMacDigest};
pub use signed_cookie::SignedCookieJar;
pub use signed_global_id::{SignedGlobalIds, ATTACHABLE_PURPOSE};
pub use signed_id::SignedIdVerifier;
