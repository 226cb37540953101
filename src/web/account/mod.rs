//! The account's administration (Campfire's `accounts/*` controllers): [`settings`] (the
//! account page, its name, custom styles and room-creation setting; the page itself is for
//! everyone signed in), and, for administrators only (403 for anyone else, 401 when signed
//! out), [`users`] (the people, their roles, deactivation, the join code), [`bots`] and [`mail`]
//! (the mail settings that are not secrets, the test e-mail).

pub mod bots;
pub mod mail;
pub mod settings;
pub mod sso;
pub mod users;
