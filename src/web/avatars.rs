//! Avatars and the account logo (Campfire's `Users::AvatarsController`, `User::Avatar`,
//! `Accounts::LogosController` and `Account#logo`), stored as Active Storage attachments:
//! `avatar` of a `User`, `logo` of the `Account`, each with its square variants.
//!
//! | route | answer |
//! |---|---|
//! | `GET /users/{id}/avatar?v=<version>` | the avatar's square variant (at most 512 px a side, JPEG or PNG); without one, the initials (a bot: the bot picture) as SVG. `{id}` may also be Campfire's avatar token (`signed_id(purpose: :avatar)`). Signed-in users (401 otherwise); 404 for an unknown user |
//! | `POST /users/{id}/avatar` | `user[avatar]` as a multipart file, or a direct upload's signed blob id: the new avatar, 302 back. One's own (`me` or one's id); an administrator for a bot (403 otherwise); 422 for what is not an image the decoders read; 413 past `--max-upload-bytes` |
//! | `DELETE /users/{id}/avatar` | removes the avatar (the initials return): 302 back; the same rule |
//! | `GET /account/logo?size=small&v=<version>` | the logo as a 512 px (`size=small`: 192 px) square PNG, or the stock icon; anyone (the sign-in page and the web-app icons show it) |
//! | `POST /account/logo`, `DELETE /account/logo` | `account[logo]` as for an avatar: administrators only (403; 401 signed out) |
//!
//! **Versions.** A page links an avatar as `/users/<id>/avatar?v=<blob id>` and the logo as
//! `/account/logo?v=<blob id>`: a new upload is a new blob, so a new URL. An answer whose `v`
//! is the current version may be kept a year (`immutable`); any other is revalidated
//! (`no-cache`, with an `ETag`).
//!
//! Variants are made when the file arrives (on the blocking pool, one image at a time, within
//! the decode limits of [`crate::storage::process`]): a file that is not an image the decoders
//! read is refused and nothing is kept. EXIF orientation is applied; no metadata survives.

use crate::config::Config;
use crate::db::Db;
use crate::rails::Keys;
use crate::storage::Storage;
use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;
use std::sync::Arc;

use super::context::Ctx;
use super::error::AppError;
use super::files;
use super::respond::found;
use crate::db::blobs::{self, record, Blob};
use crate::db::users::{self, User};
use crate::storage::process;

/// An avatar's largest side, in pixels (Campfire's `:square` variant limit).
pub const AVATAR_SIZE: u32 = 512;
/// The logo's sizes: the large (512 px) and `size=small` (192 px) web-app icons.
pub const LOGO_SIZES: [u32; 2] = [512, 192];

/// The transformations of a square variant of `size` px (`{resize_to_fill: [size, size]}`).
fn square(size: u32) -> crate::rails::marshal::Value {
    use crate::rails::marshal::Value;
    Value::Hash(vec![(
        Value::Sym("resize_to_fill".into()),
        Value::Array(vec![Value::Int(size.into()), Value::Int(size.into())]),
    )])
}

/// The `variation_digest` of a square variant of `size` px.
pub fn square_digest(size: u32) -> String {
    crate::rails::active_storage::variation_digest(&square(size))
}

/// The query of the image routes.
#[derive(Debug, Deserialize)]
pub struct ImageQuery {
    /// The version the page linked.
    pub v: Option<String>,
    /// `small` for the 192 px logo.
    pub size: Option<String>,
}

/// Cache headers: a year for the current version, else revalidate by `ETag`.
fn cache_headers(headers: &mut HeaderMap, etag: &str, current: bool) {
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if current {
            "private, max-age=31536000, immutable"
        } else {
            "private, no-cache"
        }),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("\"{etag}\"")) {
        headers.insert(header::ETAG, v);
    }
}

fn not_modified(request_headers: &HeaderMap, etag: &str) -> bool {
    request_headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim().trim_matches('"') == etag))
}

async fn image_answer(
    storage: &Storage,
    request_headers: &HeaderMap,
    image: Option<Blob>,
    fallback: (&'static str, Vec<u8>),
    etag: &str,
    current: bool,
) -> Result<Response, AppError> {
    if not_modified(request_headers, etag) {
        let mut response = StatusCode::NOT_MODIFIED.into_response();
        cache_headers(response.headers_mut(), etag, current);
        return Ok(response);
    }
    let file = match &image {
        Some(blob) => storage.read(&blob.service_name, &blob.key).await,
        None => None,
    };
    let (content_type, body) = match (file, &image) {
        (Some(bytes), Some(blob)) => (
            crate::storage::identify::served_content_type(blob.content_type.as_deref()).to_owned(),
            Body::from(bytes),
        ),
        _ => (fallback.0.to_owned(), Body::from(fallback.1)),
    };
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    files::guard_headers(headers);
    if let Ok(v) = HeaderValue::from_str(&content_type) {
        headers.insert(header::CONTENT_TYPE, v);
    }
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("inline"),
    );
    cache_headers(headers, etag, current);
    Ok(response)
}

/// The initials avatar of a user as SVG (the partials' colours and letters).
pub fn initials_svg(user: &User) -> Vec<u8> {
    if user.role == crate::db::Role::Bot {
        return BOT_SVG.as_bytes().to_vec();
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 36 36\" width=\"512\" height=\"512\">\
<rect width=\"36\" height=\"36\" rx=\"18\" fill=\"hsl({}, 55%, 45%)\"/>\
<text x=\"50%\" y=\"50%\" dy=\"0.35em\" text-anchor=\"middle\" fill=\"#ffffff\" \
font-family=\"-apple-system, BlinkMacSystemFont, sans-serif\" font-size=\"14\" font-weight=\"600\">{}</text></svg>",
        super::profiles::avatar_hue(user.id),
        crate::render::escape_html(&crate::render::initials(&user.name))
    )
    .into_bytes()
}

/// A bot without an avatar: a round face with two eyes and an antenna.
const BOT_SVG: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 36 36\" width=\"512\" height=\"512\">\
<rect width=\"36\" height=\"36\" rx=\"18\" fill=\"#5b6470\"/>\
<rect x=\"9\" y=\"12\" width=\"18\" height=\"14\" rx=\"4\" fill=\"#ffffff\"/>\
<circle cx=\"14\" cy=\"19\" r=\"2\" fill=\"#5b6470\"/><circle cx=\"22\" cy=\"19\" r=\"2\" fill=\"#5b6470\"/>\
<path d=\"M18 12V8\" stroke=\"#ffffff\" stroke-width=\"2\" stroke-linecap=\"round\"/></svg>";

/// `GET /users/{user_id}/avatar` (see the module docs).
pub async fn show(
    State(db): State<Db>,
    State(keys): State<Keys>,
    State(storage): State<Arc<Storage>>,
    Extension(ctx): Extension<Ctx>,
    Path(user_id): Path<String>,
    Query(query): Query<ImageQuery>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    ctx.require_user()?;
    let user = match campfire_avatar_token(&keys.signed_ids, &user_id) {
        Some(id) => users::find(&db.pool, id).await?.ok_or(AppError::NotFound)?,
        None => target(&db, &ctx, &user_id).await?,
    };
    let avatar = blobs::attached(&db.pool, "avatar", record::USER, user.id).await?;
    let version = avatar.as_ref().map_or(0, |b| b.id);
    let image = match &avatar {
        Some(a) => blobs::variant(&db.pool, a.id, &square_digest(AVATAR_SIZE)).await?,
        None => None,
    };
    let etag = if avatar.is_some() {
        format!("avatar-{}-{version}", user.id)
    } else {
        // The initials follow the name.
        let initials = crate::render::initials(&user.name);
        format!("initials-{}-{}", user.id, hex::encode(initials.as_bytes()))
    };
    let current = avatar.is_some() && query.v.as_deref() == Some(version.to_string().as_str());
    image_answer(
        &storage,
        &headers,
        image,
        ("image/svg+xml", initials_svg(&user)),
        &etag,
        current,
    )
    .await
}

/// The user id of a Campfire avatar URL's segment, `/users/<avatar_token>/avatar`: Campfire
/// links avatars by `user.signed_id(purpose: :avatar)` (`User::Avatar#avatar_token`), so the
/// pages and bodies of a team moved from Campfire keep showing them. `None` for anything else
/// (an id, `me`, a forged token).
fn campfire_avatar_token(signed_ids: &crate::rails::SignedIdVerifier, raw: &str) -> Option<i64> {
    if raw == "me" || raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    signed_ids.verify("user", "avatar", raw)
}

/// The user `raw` names (`me` or an id); 404 when unknown.
async fn target(db: &Db, ctx: &Ctx, raw: &str) -> Result<User, AppError> {
    let id = match (raw, &ctx.user) {
        ("me", Some(me)) => me.id,
        ("me", None) => return Err(AppError::Unauthorized),
        _ => super::extract::parse_id(raw)?,
    };
    users::find(&db.pool, id).await?.ok_or(AppError::NotFound)
}

/// Whose avatar the signed-in user may change: their own, or, for administrators, a bot's.
/// Returns the user and where to go back to.
async fn changeable(db: &Db, ctx: &Ctx, raw: &str) -> Result<(User, &'static str), AppError> {
    let me = ctx.require_user()?;
    let user = target(db, ctx, raw).await?;
    if user.id == me.id {
        Ok((user, "/users/me/profile"))
    } else if user.role == crate::db::Role::Bot && me.role == crate::db::Role::Administrator {
        Ok((user, "/account/bots"))
    } else {
        Err(AppError::Forbidden)
    }
}

/// The uploaded image of a form: a multipart file in `field` (or `file_field_short`), or a
/// direct upload's signed id in the urlencoded `field`. 422 without one.
async fn uploaded(
    config: &Config,
    db: &Db,
    storage: &Storage,
    ctx: &Ctx,
    user: &User,
    request: Request,
    fields: [&str; 2],
) -> Result<Blob, AppError> {
    if files::is_multipart(request.headers()) {
        let mut form =
            files::read_upload_form_any(config, db, storage, user, request, &fields).await?;
        return form
            .blob
            .take()
            .ok_or_else(|| AppError::Unprocessable(format!("{} is missing", fields[0])));
    }
    let signed_id = fields
        .iter()
        .find_map(|f| ctx.form.get(f))
        .filter(|v| !v.is_empty())
        .ok_or_else(|| AppError::Unprocessable(format!("{} is missing", fields[0])))?;
    files::blob_for_attaching(db, storage, user, signed_id).await
}

/// Makes the square variants `sizes` of `blob` (`exact`: filled to the size, upscaling a small
/// image; else at most the size). On any failure the blob is purged and the answer is 422.
async fn make_squares(
    db: &Db,
    storage: &Storage,
    blob: &Blob,
    sizes: &[u32],
    exact: bool,
    png: bool,
) -> Result<(), AppError> {
    let refuse = || AppError::Unprocessable("the file is not an image that can be read".into());
    let readable = blob
        .content_type
        .as_deref()
        .is_some_and(|t| matches!(t, "image/png" | "image/jpeg" | "image/gif" | "image/webp"));
    let copy = if readable {
        storage.local_copy(blob).await
    } else {
        None
    };
    let Some(copy) = copy else {
        files::purge_blob(db, storage, blob.id).await;
        return Err(refuse());
    };
    let made = {
        let _permit = storage
            .processing
            .acquire()
            .await
            .map_err(|e| AppError::Internal(e.into()))?;
        let sizes = sizes.to_vec();
        let path = copy.path.clone();
        tokio::task::spawn_blocking(move || {
            sizes
                .into_iter()
                .map(|n| {
                    let fit = if exact {
                        process::Fit::Fill(n, n)
                    } else {
                        process::Fit::Square(n)
                    };
                    process::variant_as(&path, fit, png).map(|e| (n, e))
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .await
        .map_err(|e| AppError::Internal(e.into()))?
    };
    let encoded = match made {
        Ok(encoded) => encoded,
        Err(e) => {
            tracing::info!(blob_id = blob.id, error = %e, "image refused");
            files::purge_blob(db, storage, blob.id).await;
            return Err(refuse());
        }
    };
    for (n, e) in encoded {
        if let Err(err) = files::store_variant(db, storage, blob, &square_digest(n), &e).await {
            files::purge_blob(db, storage, blob.id).await;
            return Err(AppError::Internal(err));
        }
    }
    Ok(())
}

/// Attaches `blob` as the one `name` of a record, purging what it replaces; 422
/// ([`files::ALREADY_ATTACHED`]) when another request attached `blob` first.
async fn replace(
    db: &Db,
    storage: &Storage,
    name: &str,
    record_type: &str,
    record_id: i64,
    blob: &Blob,
) -> Result<(), AppError> {
    let old = blobs::attach_one(&db.pool, name, record_type, record_id, blob.id)
        .await
        .map_err(|e| {
            if blobs::is_already_attached(&e) {
                AppError::Unprocessable(files::ALREADY_ATTACHED.into())
            } else {
                AppError::from(e)
            }
        })?;
    for id in old {
        files::purge_blob(db, storage, id).await;
    }
    Ok(())
}

/// `POST /users/{user_id}/avatar` (see the module docs).
pub async fn create(
    State(config): State<Arc<Config>>,
    State(db): State<Db>,
    State(storage): State<Arc<Storage>>,
    Extension(ctx): Extension<Ctx>,
    Path(user_id): Path<String>,
    request: Request,
) -> Result<Response, AppError> {
    let (user, back) = changeable(&db, &ctx, &user_id).await?;
    let uploader = ctx.require_user()?;
    let blob = uploaded(
        &config,
        &db,
        &storage,
        &ctx,
        uploader,
        request,
        ["user[avatar]", "avatar"],
    )
    .await?;
    attach_avatar(&db, &storage, user.id, &blob).await?;
    Ok(found(back))
}

/// Makes `blob` the avatar of user `user_id`: its square variant made (422, and the blob
/// purged, for what is not an image the decoders read), the old avatar purged, the user
/// touched so pages link the new version.
pub(crate) async fn attach_avatar(
    db: &Db,
    storage: &Storage,
    user_id: i64,
    blob: &Blob,
) -> Result<(), AppError> {
    make_squares(db, storage, blob, &[AVATAR_SIZE], false, false).await?;
    replace(db, storage, "avatar", record::USER, user_id, blob).await?;
    users::touch(&db.pool, user_id).await?;
    storage.avatars.set(user_id, Some(blob.id));
    Ok(())
}

/// `DELETE /users/{user_id}/avatar` (see the module docs).
pub async fn destroy(
    State(db): State<Db>,
    State(storage): State<Arc<Storage>>,
    Extension(ctx): Extension<Ctx>,
    Path(user_id): Path<String>,
) -> Result<Response, AppError> {
    let (user, back) = changeable(&db, &ctx, &user_id).await?;
    for id in blobs::detach(&db.pool, "avatar", record::USER, user.id).await? {
        files::purge_blob(&db, &storage, id).await;
    }
    users::touch(&db.pool, user.id).await?;
    storage.avatars.set(user.id, None);
    Ok(found(back))
}

/// The account's id, for its `logo` attachment (404 before the first run).
async fn account_id(db: &Db) -> Result<i64, AppError> {
    Ok(crate::db::accounts::find(&db.pool)
        .await?
        .ok_or(AppError::NotFound)?
        .id)
}

/// `GET /account/logo` (see the module docs).
pub async fn show_logo(
    State(db): State<Db>,
    State(storage): State<Arc<Storage>>,
    Query(query): Query<ImageQuery>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let small = query.size.as_deref() == Some("small");
    let size = LOGO_SIZES[usize::from(small)];
    let logo = match crate::db::accounts::find(&db.pool).await? {
        Some(account) => blobs::attached(&db.pool, "logo", record::ACCOUNT, account.id).await?,
        None => None,
    };
    let version = logo.as_ref().map_or(0, |b| b.id);
    let image = match &logo {
        Some(l) => blobs::variant(&db.pool, l.id, &square_digest(size)).await?,
        None => None,
    };
    let stock = if small {
        super::pwa::ICON_192
    } else {
        super::pwa::ICON_512
    };
    let etag = format!("logo-{version}-{size}");
    let current = query.v.as_deref() == Some(version.to_string().as_str());
    let mut response = image_answer(
        &storage,
        &headers,
        image,
        ("image/png", stock.to_vec()),
        &etag,
        current,
    )
    .await?;
    // Anyone may see it (the sign-in page, the installed app's icon): a shared cache may keep it.
    let cache = if current {
        "public, max-age=31536000, immutable"
    } else {
        "public, no-cache"
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    Ok(response)
}

/// `POST /account/logo` (see the module docs).
pub async fn create_logo(
    State(config): State<Arc<Config>>,
    State(db): State<Db>,
    State(storage): State<Arc<Storage>>,
    Extension(ctx): Extension<Ctx>,
    request: Request,
) -> Result<Response, AppError> {
    let admin = ctx.require_administrator()?;
    let account = account_id(&db).await?;
    let blob = uploaded(
        &config,
        &db,
        &storage,
        &ctx,
        admin,
        request,
        ["account[logo]", "logo"],
    )
    .await?;
    make_squares(&db, &storage, &blob, &LOGO_SIZES, true, true).await?;
    replace(&db, &storage, "logo", record::ACCOUNT, account, &blob).await?;
    db.account_settings.forget();
    Ok(found("/account/edit"))
}

/// `DELETE /account/logo` (see the module docs).
pub async fn destroy_logo(
    State(db): State<Db>,
    State(storage): State<Arc<Storage>>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    ctx.require_administrator()?;
    let account = account_id(&db).await?;
    for id in blobs::detach(&db.pool, "logo", record::ACCOUNT, account).await? {
        files::purge_blob(&db, &storage, id).await;
    }
    db.account_settings.forget();
    Ok(found("/account/edit"))
}
