//! Searching messages (Campfire's `SearchesController`): `GET /searches?q=…` shows the
//! matches, newest first, from the rooms the user is a member of, with the user's recent
//! searches; `POST /searches` records a search and redirects to its results;
//! `DELETE /searches/clear` forgets the recent searches. The match runs on SQLite FTS5
//! (`message_search_index`), every word required.

use crate::assets::BrowserAssets;
use crate::db::Db;
use crate::storage::Storage;
use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;
use std::sync::Arc;

use super::context::Ctx;
use super::error::AppError;
use super::extract::SignedInPage;
use super::respond::found;
use crate::db::rooms;
use crate::db::searches::{self, Search};
use crate::render;

/// Longest query, in characters (longer ones get 422).
pub const MAX_QUERY_CHARS: usize = 200;
/// Recent searches kept per user (Campfire keeps 10).
pub const RECENT_SEARCHES: i64 = 10;
/// Most messages a search shows (Campfire shows the last 100).
pub const MAX_RESULTS: i64 = 100;

/// The search page (`templates/searches/index.html`).
#[derive(Template, Debug)]
#[template(path = "searches/index.html")]
pub struct SearchPage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The query searched, empty when none.
    pub query: &'a str,
    /// [`MAX_QUERY_CHARS`], for the input's `maxlength`.
    pub max_query: usize,
    /// The user's recent searches, newest first.
    pub recent: &'a [Search],
    /// The matching messages, newest first, each with its room.
    pub results: &'a [SearchHit],
    /// The signed-in user's id (the page's `current-user-id`, for the scripts).
    pub user_id: i64,
    /// The import map and script tags of the app's JS (as the room page loads them).
    pub scripts: &'a str,
}

/// One search result: the message's partial under the name of its room.
#[derive(Debug)]
pub struct SearchHit {
    /// The message's room.
    pub room_id: i64,
    /// What the room is called for the reader (a direct room: its other members' names).
    pub room_name: String,
    /// The message's id.
    pub message_id: i64,
    /// The message's partial.
    pub html: String,
}

/// The query string of `GET /searches`.
#[derive(Debug, Deserialize)]
pub struct SearchQuery {
    /// The words searched.
    pub q: Option<String>,
}

/// A query as Campfire reads it: every character that is not part of a word becomes a
/// space; trimmed.
///
/// # Errors
/// 422 past [`MAX_QUERY_CHARS`].
pub fn clean_query(raw: &str) -> Result<String, AppError> {
    if raw.chars().count() > MAX_QUERY_CHARS {
        return Err(AppError::Unprocessable(format!(
            "q is too long (at most {MAX_QUERY_CHARS} characters)"
        )));
    }
    let cleaned: String = raw
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' {
                c
            } else {
                ' '
            }
        })
        .collect();
    Ok(cleaned.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// `GET /searches[?q=…]`: the page (302 to the sign-in form when signed out); 422 for an
/// oversize query.
pub async fn index(
    State(db): State<Db>,
    State(storage): State<Arc<Storage>>,
    State(assets): State<Arc<BrowserAssets>>,
    SignedInPage { ctx, user }: SignedInPage,
    Query(params): Query<SearchQuery>,
) -> Result<Response, AppError> {
    let query = clean_query(params.q.as_deref().unwrap_or(""))?;
    let results = if query.is_empty() {
        Vec::new()
    } else {
        searches::messages(&db.pool, user.id, &query, MAX_RESULTS).await?
    };
    let mut names: std::collections::HashMap<i64, String> = std::collections::HashMap::new();
    let mut hits = Vec::with_capacity(results.len());
    for m in &results {
        if let std::collections::hash_map::Entry::Vacant(slot) = names.entry(m.room_id) {
            let name = rooms::sidebar_entry(&db.pool, m.room_id, user.id)
                .await?
                .map_or_else(|| format!("Room {}", m.room_id), |entry| entry.label);
            slot.insert(name);
        }
        hits.push(SearchHit {
            room_id: m.room_id,
            room_name: names.get(&m.room_id).cloned().unwrap_or_default(),
            message_id: m.id,
            html: render::message(m, &storage.verifier)?,
        });
    }
    let recent = searches::recent(&db.pool, user.id).await?;
    let token = ctx.csrf_token();
    let page = SearchPage {
        csrf_token: &token,
        query: &query,
        max_query: MAX_QUERY_CHARS,
        recent: &recent,
        results: &hits,
        user_id: user.id,
        scripts: assets.head_html(),
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `POST /searches` with `q`: records the search (the newest [`RECENT_SEARCHES`] are kept)
/// and answers 302 to `/searches?q=…`. 401 when signed out, 422 for an oversize query; a
/// query without words records nothing.
pub async fn create(
    State(db): State<Db>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let query = clean_query(ctx.form.get("q").unwrap_or(""))?;
    if query.is_empty() {
        return Ok(found("/searches"));
    }
    searches::record(&db.pool, user.id, &query, RECENT_SEARCHES).await?;
    let encoded: String =
        percent_encoding::utf8_percent_encode(&query, percent_encoding::NON_ALPHANUMERIC)
            .to_string();
    Ok(found(&format!("/searches?q={encoded}")))
}

/// `DELETE /searches/clear`: forgets the user's recent searches; 302 to `/searches`.
pub async fn clear(
    State(db): State<Db>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    searches::clear(&db.pool, user.id).await?;
    Ok(found("/searches"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_keep_words_only() {
        assert_eq!(clean_query("  hello, \"world\"* ").unwrap(), "hello world");
        assert_eq!(clean_query("über_cool").unwrap(), "über_cool");
        assert!(clean_query(&"a".repeat(MAX_QUERY_CHARS + 1)).is_err());
    }
}
