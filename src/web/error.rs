//! Errors of HTTP handlers and the pages they turn into.
//!
//! A handler returns `Result<_, AppError>`; each variant has one status. Database and other
//! internal errors are logged with their detail and shown to the client as a generic 500
//! page: no SQL, path or secret ever reaches a response.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use crate::render::ErrorPage;

/// `Retry-After` of a [`AppError::Busy`] answer, in seconds.
pub const RETRY_AFTER_SECS: &str = "1";

/// What went wrong in a request, mapped to its HTTP status.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// 404: unknown route, room or message, or a room the user is not a member of.
    #[error("not found")]
    NotFound,
    /// 400: malformed request (invalid UTF-8, bad parameter).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// 401: not signed in, or a bad bot key.
    #[error("unauthorized")]
    Unauthorized,
    /// 403: signed in but not allowed.
    #[error("forbidden")]
    Forbidden,
    /// 413: body over the configured limit.
    #[error("payload too large")]
    PayloadTooLarge,
    /// 408: the body did not arrive within the body timeout.
    #[error("request timeout")]
    RequestTimeout,
    /// 422: missing or invalid CSRF token, or a missing/invalid field.
    #[error("unprocessable: {0}")]
    Unprocessable(String),
    /// 429: login rate limit reached.
    #[error("too many requests")]
    TooManyRequests,
    /// 429 with `Retry-After` (whole seconds, [`crate::rate_limit::retry_after_secs`]): an
    /// attempt over its limit, which may be tried again after this wait (a password challenge
    /// past the sign-in limit).
    #[error("rate limited for {0:?}")]
    RateLimited(std::time::Duration),
    /// 413: a file that does not fit in its uploader's storage quota
    /// (`--max-storage-bytes-per-user`); the page says the quota and how much is used.
    #[error("storage quota: {used} of {quota} bytes used")]
    OverQuota {
        /// The quota, in bytes.
        quota: u64,
        /// The bytes the user's files take, in bytes.
        used: u64,
        /// The file's size in bytes, when it was declared (a direct upload's `byte_size`);
        /// None for a streamed file, cut at the bytes left.
        size: Option<u64>,
    },
    /// 503 with `Retry-After`: the database stayed locked (by another process) for the whole
    /// bounded write wait ([`crate::db::WRITE_WAIT`]); the request changed nothing.
    #[error("database busy")]
    Busy,
    /// 500: anything else; the detail is logged, not shown.
    #[error("internal error: {0}")]
    Internal(#[from] anyhow::Error),
}

impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> Self {
        if crate::db::is_busy(&e) {
            tracing::warn!(error = %e, "database locked: answering 503");
            return Self::Busy;
        }
        Self::Internal(e.into())
    }
}

impl From<askama::Error> for AppError {
    fn from(e: askama::Error) -> Self {
        Self::Internal(e.into())
    }
}

impl AppError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::PayloadTooLarge | Self::OverQuota { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::TooManyRequests | Self::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::Busy => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        let (title, detail): (&str, String) = match &self {
            Self::NotFound => (
                "Not found",
                "The page you were looking for doesn't exist.".into(),
            ),
            Self::BadRequest(why) => ("Bad request", why.clone()),
            Self::Unauthorized => ("Unauthorized", "Please sign in.".into()),
            Self::Forbidden => ("Forbidden", "You are not allowed to do that.".into()),
            Self::PayloadTooLarge => (
                "Payload too large",
                "The request body is over the limit.".into(),
            ),
            Self::RequestTimeout => (
                "Request timeout",
                "The request body did not arrive in time.".into(),
            ),
            Self::Unprocessable(why) => ("Unprocessable", why.clone()),
            Self::TooManyRequests => ("Too many requests", "Try again later.".into()),
            Self::RateLimited(wait) => (
                "Too many attempts",
                format!(
                    "Try again in {} seconds.",
                    crate::rate_limit::retry_after_secs(*wait)
                ),
            ),
            Self::OverQuota { quota, used, size } => {
                ("Storage quota reached", over_quota(*quota, *used, *size))
            }
            Self::Busy => (
                "Busy",
                "The database is busy. Please try again in a moment.".into(),
            ),
            Self::Internal(e) => {
                tracing::error!(error = %e, "request failed");
                ("Something went wrong", "Please try again.".into())
            }
        };
        let page = ErrorPage {
            csrf_token: "",
            title,
            detail: &detail,
        };
        let body = askama::Template::render(&page).unwrap_or_else(|_| title.to_owned());
        let mut response = (status, Html(body)).into_response();
        if matches!(self, Self::Busy) {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static(RETRY_AFTER_SECS),
            );
        }
        if let Self::RateLimited(wait) = self {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                crate::rate_limit::retry_after_secs(wait).into(),
            );
        }
        response
    }
}

/// The text of an [`AppError::OverQuota`] page: the quota, what the user's files take and
/// the file that does not fit, in sizes for people with the exact bytes beside them.
fn over_quota(quota: u64, used: u64, size: Option<u64>) -> String {
    let amount = |bytes: u64| {
        let human = crate::storage::human_size(i64::try_from(bytes).unwrap_or(i64::MAX));
        format!("{human} ({bytes} bytes)")
    };
    let left = quota.saturating_sub(used);
    let file = match size {
        Some(size) => format!("this file of {} does not fit", amount(size)),
        None if left == 0 => "there is no room left".to_owned(),
        None => format!("this file is larger than the {} left", amount(left)),
    };
    format!(
        "Your files take {} of your storage quota of {}, and {file}. Delete some of your files \
         (a message's file goes with the message) to make room.",
        amount(used),
        amount(quota)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_over_quota_page_says_the_quota_what_is_used_and_the_file() {
        let text = over_quota(2 * 1024 * 1024, 1536 * 1024, Some(600 * 1024));
        assert_eq!(
            text,
            "Your files take 1.5 MB (1572864 bytes) of your storage quota of 2 MB (2097152 \
             bytes), and this file of 600 KB (614400 bytes) does not fit. Delete some of your \
             files (a message's file goes with the message) to make room."
        );
        assert!(over_quota(1000, 400, None).contains("larger than the 600 Bytes (600 bytes) left"));
        assert!(over_quota(1000, 1200, None).contains("there is no room left"));
    }
}
