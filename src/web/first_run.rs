//! The first run (Campfire's `FirstRunsController`): on a database with no account and no
//! user (`hearth serve --no-seed`), anyone may create the administrator; the account and the
//! first open room come with it. Once done, both routes send everyone to `/`. The form may
//! carry the administrator's avatar (`user[avatar]`): the page's script then posts it as
//! multipart with the CSRF token in `X-CSRF-Token` (`assets/js/first_run.js`), and the picture
//! becomes the new user's avatar as the profile's upload would make it.

use crate::db::Db;
use askama::Template;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;

use super::context::Ctx;
use super::error::AppError;
use super::fields::{self, MAX_NAME_CHARS};
use super::files;
use super::form::Form;
use super::respond::found;
use super::sessions::{hash_password, start_session};
use crate::db::accounts;

/// The first-run form (`templates/first_runs/show.html`).
#[derive(Template, Debug)]
#[template(path = "first_runs/show.html")]
pub struct FirstRunPage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// An alert above the form.
    pub alert: Option<&'a str>,
}

/// `GET /first_run`: the form, or 302 to `/` once the account exists.
pub async fn show(
    State(db): State<Db>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    if !accounts::needs_first_run(&db.pool).await? {
        return Ok(found("/"));
    }
    let token = ctx.csrf_token();
    let page = FirstRunPage {
        csrf_token: &token,
        alert: None,
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

handles_of! {
    /// What the first run uses: the settings, the database, the cookie keys (the first
    /// session) and the files (the administrator's avatar).
    pub struct FirstRun {
        /// The settings.
        config: std::sync::Arc<crate::config::Config>,
        /// The database.
        db: Db,
        /// The cookie jar's keys.
        keys: crate::rails::Keys,
        /// The files.
        storage: std::sync::Arc<crate::storage::Storage>,
    }
}

/// `POST /first_run` with `user[name]` (1-100 characters), `user[email_address]` and
/// `user[password]` (1-72 bytes), urlencoded, or as multipart with an optional `user[avatar]`
/// image: creates the account, the administrator (with the avatar) and the room "All Talk",
/// signs the administrator in and answers 302 to `/`. 422 for a bad field; 413 for an avatar
/// past `--max-upload-bytes`; 302 to `/` without creating anything once the account exists. An
/// avatar the decoders cannot read leaves the account made without it (the profile can add one).
pub async fn create(
    State(state): State<FirstRun>,
    Extension(ctx): Extension<Ctx>,
    request: Request,
) -> Result<Response, AppError> {
    if !accounts::needs_first_run(&state.db.pool).await? {
        return Ok(found("/"));
    }
    let headers = request.headers().clone();
    let (form, avatar) = if files::is_multipart(&headers) {
        let (form, avatar) = read_multipart(request, state.storage.max_upload_bytes).await?;
        (std::sync::Arc::new(form), avatar)
    } else {
        (ctx.form.clone(), None)
    };
    let name = fields::required(&form, "user[name]", MAX_NAME_CHARS)?;
    let email = fields::email(&form, "user[email_address]")?;
    let digest = hash_password(form.get("user[password]").unwrap_or("")).await?;
    let Some(created) = accounts::first_run(&state.db.pool, &name, &email, &digest).await? else {
        return Ok(found("/"));
    };
    tracing::info!(user_id = created.user_id, "first run: account created");
    if let Some((filename, bytes)) = avatar {
        if let Err(e) = store_avatar(&state, created.user_id, &filename, bytes).await {
            tracing::info!(user_id = created.user_id, error = ?e, "first run: avatar not kept");
        }
    }
    start_session(
        &state.config,
        &state.db,
        &state.keys,
        &ctx,
        &headers,
        created.user_id,
    )
    .await
}

/// The text fields and the avatar (its file name and bytes, when a file was picked) of a
/// multipart first-run form. The picture is held in memory: this form is posted once per
/// install, and the picture is bounded by `max_bytes`.
async fn read_multipart(
    request: Request,
    max_bytes: u64,
) -> Result<(Form, Option<(String, bytes::Bytes)>), AppError> {
    const TEXT_BYTES: u64 = 64 * 1024;
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max_bytes + TEXT_BYTES) {
        return Err(AppError::PayloadTooLarge);
    }
    let boundary = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| multer::parse_boundary(v).ok())
        .ok_or_else(|| AppError::BadRequest("multipart form without a boundary".into()))?;
    let limits = multer::SizeLimit::new()
        .whole_stream(max_bytes + TEXT_BYTES)
        .for_field("user[avatar]", max_bytes + 1)
        .per_field(TEXT_BYTES);
    let mut multipart = multer::Multipart::with_constraints(
        request.into_body().into_data_stream(),
        boundary,
        multer::Constraints::new().size_limit(limits),
    );
    let too_large = |e: multer::Error| match e {
        multer::Error::StreamSizeExceeded { .. } | multer::Error::FieldSizeExceeded { .. } => {
            AppError::PayloadTooLarge
        }
        other => AppError::BadRequest(other.to_string()),
    };
    let mut fields = Vec::new();
    let mut avatar = None;
    while let Some(field) = multipart.next_field().await.map_err(too_large)? {
        let name = field.name().unwrap_or("").to_owned();
        if name == "user[avatar]" {
            let filename = field.file_name().unwrap_or("").to_owned();
            let bytes = field.bytes().await.map_err(too_large)?;
            if bytes.len() as u64 > max_bytes {
                return Err(AppError::PayloadTooLarge);
            }
            if !filename.is_empty() && !bytes.is_empty() {
                avatar = Some((filename, bytes));
            }
        } else if fields.len() < 16 {
            fields.push((name, field.text().await.map_err(too_large)?));
        }
    }
    Ok((Form::from(fields), avatar))
}

/// Stores the first run's picture as the new administrator's avatar.
async fn store_avatar(
    state: &FirstRun,
    user_id: i64,
    filename: &str,
    bytes: bytes::Bytes,
) -> Result<(), AppError> {
    let user = crate::db::users::find(&state.db.pool, user_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let blob = files::store_bytes(
        &state.config,
        &state.db,
        &state.storage,
        &user,
        filename,
        bytes,
    )
    .await?;
    super::avatars::attach_avatar(&state.db, &state.storage, user_id, &blob).await
}
