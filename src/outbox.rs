//! [`Outbox`]: what leaves the server on its own queue or client, off the request path: web
//! pushes, bot webhooks, mail, and the fetches of link previews.

use std::sync::Arc;

use crate::link_previews::LinkPreviews;
use crate::mail::Mailer;
use crate::push::Pusher;
use crate::webhooks::WebhookQueue;

/// The outbox handle. Cloning it clones `Arc`s.
#[derive(Clone, Debug)]
pub struct Outbox {
    /// Web push: the VAPID public key and the queue of notifications to send.
    pub pusher: Pusher,
    /// The bounded queue and client of bot webhooks.
    pub webhooks: Arc<WebhookQueue>,
    /// Outgoing mail (`--smtp-url`): off, or the queue in front of the SMTP server.
    pub mailer: Mailer,
    /// Link previews: on or off, the allow-list and the bound on fetches at once.
    pub link_previews: Arc<LinkPreviews>,
}
