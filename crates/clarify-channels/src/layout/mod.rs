//! What a request's message says, decided once for every platform.
//!
//! A request reads the same everywhere: its headline, the people it mentions, its context and
//! display blocks, each question with its options (or its action and arguments), a footer
//! saying who asked, when it expires, how a quorum stands and whom it is for, and once resolved
//! the outcome. The platforms whose message is text in a markup (Discord, Mattermost,
//! Telegram) lay it out with [`message`] through their [`Dialect`]: the markup, the limits and
//! the few pieces each words its own way. The platforms that draw structured cards (Slack,
//! Teams, Google Chat) and e-mail and ntfy take the same pieces from here ([`option_lines`],
//! [`arguments`], [`pending_facts`], the fixed words) and only say how each is drawn.

mod markdown;
pub(crate) mod words;

use chrono::{DateTime, Utc};
use clarify_core::{Approval, Choices, Context, NewRequest, QuestionKind};
use clarify_model::RequestRecord;
use clarify_render::Markup;

pub use markdown::{Flavour, Markdown};

use crate::text::{cut, fit};
use words::{asked_by, display_text, headline, outcome_text};

/// The link that ends display blocks cut to the platform's budget.
pub(crate) const THE_REST: &str = "The rest is on the answer page";

/// What precedes an approval's action name.
pub(crate) const ACTION: &str = "Action: ";

/// The headline, as every platform cuts it.
const HEADLINE: usize = 200;

/// The names of the responders a request is for, as every platform cuts them.
const RESPONDERS: usize = 200;

/// How much of each part a platform's message shows, in characters of agent text (before
/// escaping); `message` is the whole message as the platform's markup counts it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The whole message; past it, the message is only the headline and the outcome.
    pub message: usize,
    /// That short message, used when the whole one does not fit.
    pub fallback: usize,
    /// Display blocks, as the markup counts them.
    pub display: usize,
    pub context: usize,
    /// Pretty JSON context.
    pub json: usize,
    pub question: usize,
    pub option: usize,
    /// An option's description; `None` when the platform leaves descriptions out.
    pub description: Option<usize>,
    /// An approval's action name.
    pub action: usize,
    /// An approval's pretty arguments.
    pub arguments: usize,
    /// The agent's and the session's names in the footer.
    pub names: usize,
    pub outcome: usize,
}

/// A platform whose message is text in a markup: its limits, and the pieces it words or draws
/// its own way. Everything else about the message is [`message`]'s.
pub(crate) trait Dialect: Markup {
    const LIMITS: Limits;
    /// Whether a pending request's message ends in a link to the answer page, for a platform
    /// whose buttons do not carry one.
    const OPEN_LINK: bool = false;

    /// A mention of the platform's user `id`.
    fn mention(&self, id: &str) -> String;
    /// A link to our own answer page (`url` is not agent text) reading as `label` (marked up).
    fn answer_link(&self, url: &str, label: &str) -> String;
    /// What follows an approval's arguments cut to [`Limits::arguments`].
    fn cut_note(&self, answer_url: &str) -> String;
    /// The headline (marked up) set apart at the top.
    fn headline(&self, text: &str) -> String {
        self.strong(text)
    }
    /// A question's text (marked up).
    fn question(&self, text: &str) -> String {
        text.to_owned()
    }
    /// Pretty JSON, already cut, as a block.
    fn json(&self, pretty: &str) -> String {
        self.pre(pretty, Some("json"))
    }
    /// When a pending request expires.
    fn expiry(&self, at: DateTime<Utc>) -> String {
        expires(at)
    }
    /// The footer (marked up), in small or quiet type.
    fn small(&self, text: &str) -> String {
        self.emphasis(text)
    }
    /// A last word in a pending request's footer, on how to answer it here.
    fn hint(&self, _record: &RequestRecord) -> Option<&'static str> {
        None
    }
}

/// The message for `record` as it is now in dialect `d`: pending, what is asked (mentioning
/// `mention`); resolved, how it ended.
pub(crate) fn message<D: Dialect>(
    d: &D,
    record: &RequestRecord,
    answer_url: &str,
    mention: &[String],
) -> String {
    let limits = D::LIMITS;
    let request = &record.request;
    let pending = !record.status.is_resolved();
    let mut parts = vec![d.headline(&fit(d, &headline(record), HEADLINE))];
    if pending && !mention.is_empty() {
        let m: Vec<String> = mention.iter().map(|m| d.mention(m)).collect();
        parts.push(m.join(" "));
    }
    match &request.context {
        Some(Context::Text(t)) => parts.push(fit(d, t, limits.context)),
        Some(Context::Json(map)) => parts.push(d.json(&cut(&pretty(map), limits.json))),
        None => {}
    }
    let more = d.answer_link(answer_url, THE_REST);
    parts.extend(display_text(record, d, limits.display, &more));
    for q in &request.questions {
        let mut lines = vec![d.question(&fit(d, &q.text, limits.question))];
        match &q.kind {
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                let description = limits.description.map(|max| move |s: &str| fit(d, s, max));
                lines.extend(option_lines(
                    c,
                    |label| fit(d, label, limits.option),
                    &format!(" {}", d.emphasis("(recommended)")),
                    description.as_ref().map(|f| f as &dyn Fn(&str) -> String),
                ));
            }
            QuestionKind::Approval(a) => {
                lines.push(format!(
                    "{ACTION}{}",
                    d.code(&cut(&a.action.name, limits.action))
                ));
                if let Some(pretty) = arguments(request, a) {
                    lines.push(d.json(&cut(&pretty, limits.arguments)));
                    if pretty.chars().count() > limits.arguments {
                        lines.push(d.cut_note(answer_url));
                    }
                }
            }
            QuestionKind::Open | QuestionKind::Form(_) => {}
        }
        parts.push(lines.join("\n"));
    }
    let names = |s: &str| fit(d, s, limits.names);
    let mut footer: Vec<String> = asked_by(request, names, names).into_iter().collect();
    if pending {
        footer.extend(pending_facts(
            record,
            |s, max| fit(d, s, max),
            |at| d.expiry(at),
        ));
        footer.extend(d.hint(record).map(str::to_owned));
    }
    if !footer.is_empty() {
        parts.push(d.small(&footer.join(" · ")));
    }
    let open =
        D::OPEN_LINK.then(|| d.answer_link(answer_url, crate::layout::words::OPEN_IN_CLARIFY));
    if !pending {
        parts.push(d.strong(&fit(d, &outcome_text(record), limits.outcome)));
    } else if let Some(open) = &open {
        parts.push(open.clone());
    }
    let text = parts.join("\n\n");
    if d.len(&text) <= limits.message {
        return text;
    }
    // The parts are cut to fit well inside the limit; this guards their sum (cut markup could
    // leave a construct open, so the plain outcome is sent instead).
    let short = format!("{}: {}", headline(record), outcome_text(record));
    let mut out = fit(d, &short, limits.fallback);
    if let Some(open) = open {
        out.push_str("\n\n");
        out.push_str(&open);
    }
    out
}

/// A choice question's options, one line each: `1. Label (recommended)`, with `label` making
/// an option's label safe and short in the platform's markup, `recommended` marking the
/// recommended one, and `description` (when the platform shows descriptions) its description.
pub(crate) fn option_lines(
    c: &Choices,
    label: impl Fn(&str) -> String,
    recommended: &str,
    description: Option<&dyn Fn(&str) -> String>,
) -> Vec<String> {
    c.options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let mark = if c.recommended.as_deref() == Some(o.id.as_str()) {
                recommended
            } else {
                ""
            };
            let mut line = format!("{}. {}{mark}", i + 1, label(&o.label));
            if let (Some(describe), Some(d)) = (description, &o.description) {
                line.push_str(&format!(" — {}", describe(d)));
            }
            line
        })
        .collect()
}

/// An approval's arguments as pretty JSON, when its message shows them: only without display
/// blocks, which show what the action does.
pub(crate) fn arguments(request: &NewRequest, a: &Approval) -> Option<String> {
    request
        .display
        .is_empty()
        .then(|| serde_json::to_string_pretty(&a.action.arguments).unwrap_or_default())
}

/// The footer's facts about a pending request besides who asked: when it expires (worded by
/// `expiry`), how its quorum stands, whom it is for (an `oncall:` responder with the people
/// found on call), and each on-call schedule that could not be read. `text` makes words safe
/// in the platform's markup, cut to a number of characters.
pub(crate) fn pending_facts(
    record: &RequestRecord,
    text: impl Fn(&str, usize) -> String,
    expiry: impl Fn(DateTime<Utc>) -> String,
) -> Vec<String> {
    let request = &record.request;
    let mut facts = Vec::new();
    if let Some(at) = record.expires_at {
        facts.push(expiry(at));
    }
    if request.is_quorum() {
        facts.push(text(&outcome_text(record), usize::MAX));
    }
    if let Some(by) = &request.responders {
        let names: Vec<String> = by
            .iter()
            .map(|name| {
                let people = record.on_call_people(name);
                if people.is_empty() {
                    name.clone()
                } else {
                    format!("{name} ({})", people.join(", "))
                }
            })
            .collect();
        facts.push(format!("for {}", text(&names.join(", "), RESPONDERS)));
    }
    for unreadable in unreadable_on_call(record) {
        facts.push(text(&unreadable, RESPONDERS));
    }
    facts
}

/// A line for each on-call schedule the request names whose latest reading failed: why, and
/// that the other responders were notified instead.
pub(crate) fn unreadable_on_call(record: &RequestRecord) -> Vec<String> {
    let mut lines = Vec::new();
    for name in record.on_call_responders() {
        let latest = record.on_call.iter().rev().find(|s| s.responder == name);
        if let Some(why) = latest.and_then(|s| s.unreadable.as_deref()) {
            lines.push(format!("{why}; notified the other responders"));
        }
    }
    lines
}

/// When a request expires, for a platform that cannot show a time in the reader's zone.
pub(crate) fn expires(at: DateTime<Utc>) -> String {
    format!("expires {}", utc(at))
}

/// A time as the platforms that cannot show it in the reader's zone write it.
pub(crate) fn utc(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// A JSON object, pretty.
pub(crate) fn pretty(map: &serde_json::Map<String, serde_json::Value>) -> String {
    serde_json::to_string_pretty(map).unwrap_or_default()
}
