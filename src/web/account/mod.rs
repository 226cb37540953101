//! The account's administration (Campfire's `accounts/*` controllers), for administrators
//! only (403 for anyone else, 401 when signed out): [`users`] (the people, their roles,
//! deactivation, the join code) and [`bots`].

pub mod bots;
pub mod users;
