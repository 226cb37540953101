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
            return AppError::Busy;
        }
        AppError::Internal(e.into())
    }
}

impl From<askama::Error> for AppError {
    fn from(e: askama::Error) -> Self {
        AppError::Internal(e.into())
    }
}

impl AppError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            AppError::NotFound => StatusCode::NOT_FOUND,
            AppError::BadRequest(_) => StatusCode::BAD_REQUEST,
            AppError::Unauthorized => StatusCode::UNAUTHORIZED,
            AppError::Forbidden => StatusCode::FORBIDDEN,
            AppError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            AppError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            AppError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            AppError::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            AppError::Busy => StatusCode::SERVICE_UNAVAILABLE,
            AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        let (title, detail): (&str, String) = match &self {
            AppError::NotFound => (
                "Not found",
                "The page you were looking for doesn't exist.".into(),
            ),
            AppError::BadRequest(why) => ("Bad request", why.clone()),
            AppError::Unauthorized => ("Unauthorized", "Please sign in.".into()),
            AppError::Forbidden => ("Forbidden", "You are not allowed to do that.".into()),
            AppError::PayloadTooLarge => (
                "Payload too large",
                "The request body is over the limit.".into(),
            ),
            AppError::RequestTimeout => (
                "Request timeout",
                "The request body did not arrive in time.".into(),
            ),
            AppError::Unprocessable(why) => ("Unprocessable", why.clone()),
            AppError::TooManyRequests => ("Too many requests", "Try again later.".into()),
            AppError::Busy => (
                "Busy",
                "The database is busy. Please try again in a moment.".into(),
            ),
            AppError::Internal(e) => {
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
        if matches!(self, AppError::Busy) {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static(RETRY_AFTER_SECS),
            );
        }
        response
    }
}
