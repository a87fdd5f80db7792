//! The limits a request is validated against.
//!
//! Most limits are fixed by the contract and are constants here. Two are server settings: how many
//! options a question may offer (default 4, at most 24) and the timeout applied when a request
//! names none (default one hour).

/// Limits applied when validating requests and answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    max_options: usize,
    default_timeout_seconds: u64,
}

/// A server setting outside the range the contract allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitsError {
    #[error("max_options must be between 1 and {max}, got {got}")]
    MaxOptions { max: usize, got: usize },
    #[error("the default timeout must be between 0 and {max} seconds, got {got}")]
    DefaultTimeout { max: u64, got: u64 },
}

impl Limits {
    pub const MAX_QUESTIONS: usize = 5;
    pub const MAX_TEXT_CHARS: usize = 4_000;
    pub const MAX_HEADER_CHARS: usize = 32;
    pub const DEFAULT_MAX_OPTIONS: usize = 4;
    /// The ceiling for the `max_options` server setting.
    pub const MAX_OPTIONS_CEILING: usize = 24;
    pub const MAX_TAGS: usize = 10;
    pub const MAX_TAG_CHARS: usize = 64;
    pub const MAX_LABEL_CHARS: usize = 200;
    pub const MAX_DESCRIPTION_CHARS: usize = 1_000;
    /// Identifier-like fields: `session`, `agent`, `tool_call_id`, `idempotency_key`, responder
    /// names, action names.
    pub const MAX_NAME_CHARS: usize = 256;
    pub const MAX_RESPONDERS: usize = 32;
    pub const MAX_CONTEXT_TEXT_CHARS: usize = 20_000;
    /// A JSON-object context, measured as compact JSON.
    pub const MAX_CONTEXT_JSON_BYTES: usize = 65_536;
    /// Action arguments, measured as compact JSON.
    pub const MAX_ARGUMENTS_JSON_BYTES: usize = 65_536;
    pub const MAX_URL_CHARS: usize = 2_048;
    /// One year: longer waits are almost certainly a unit mistake.
    pub const MAX_TIMEOUT_SECONDS: u64 = 365 * 24 * 3600;
    pub const DEFAULT_TIMEOUT_SECONDS: u64 = 3_600;
    /// Fields of one form question.
    pub const MAX_FIELDS: usize = 20;
    /// A text field's `pattern`.
    pub const MAX_PATTERN_CHARS: usize = 500;
    /// The largest quorum (`approvals_required`).
    pub const MAX_APPROVALS_REQUIRED: u32 = 10;
    /// The shortest reminder period.
    pub const MIN_REMIND_SECONDS: u64 = 60;
    /// Free text in an answer (`text`, `other`) and an approval's `reason`.
    pub const MAX_ANSWER_CHARS: usize = 10_000;

    /// Limits with a custom `max_options` (1 to 24) and default timeout (`0`: never expires).
    pub fn new(max_options: usize, default_timeout_seconds: u64) -> Result<Self, LimitsError> {
        if !(1..=Self::MAX_OPTIONS_CEILING).contains(&max_options) {
            return Err(LimitsError::MaxOptions {
                max: Self::MAX_OPTIONS_CEILING,
                got: max_options,
            });
        }
        if default_timeout_seconds > Self::MAX_TIMEOUT_SECONDS {
            return Err(LimitsError::DefaultTimeout {
                max: Self::MAX_TIMEOUT_SECONDS,
                got: default_timeout_seconds,
            });
        }
        Ok(Self {
            max_options,
            default_timeout_seconds,
        })
    }

    pub fn max_options(&self) -> usize {
        self.max_options
    }

    /// The timeout of a request that names none; `0` means such requests never expire.
    pub fn default_timeout_seconds(&self) -> u64 {
        self.default_timeout_seconds
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_options: Self::DEFAULT_MAX_OPTIONS,
            default_timeout_seconds: Self::DEFAULT_TIMEOUT_SECONDS,
        }
    }
}
