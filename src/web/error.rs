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
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
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
        response
    }
}
