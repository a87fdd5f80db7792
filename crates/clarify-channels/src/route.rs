//! Which requests go to which channels.

use clarify_core::NewRequest;
use serde::Deserialize;

/// One `[[routes]]` entry: a request matching every filter given is announced on `channels`; a
/// route without filters matches every request.
// The doc comments are the descriptions in the handbook's configuration reference, which is
// rendered from this type's JSON Schema.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// The names of the `[[channels]]` a matching request is announced on (at least one).
    pub channels: Vec<String>,
    /// The request was made in this tenant.
    #[serde(default)]
    pub tenant: Option<String>,
    /// The request's agent: an exact name, a `prefix*`, or `*`.
    #[serde(default)]
    pub agent: Option<String>,
    /// The request carries all of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The request has a question of one of these kinds (`open`, `single`, `multi`,
    /// `approval`, `form`).
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Warn a matching request's responders this long before it expires, once: a duration
    /// (`10m`, `1h`), `0` for no warning. A request's own `warn_before_seconds` wins; the
    /// first matching route that gives one applies; without any, 10 minutes.
    #[serde(default)]
    pub warn_before: Option<String>,
}

impl Route {
    /// Whether a request of `tenant` matches every filter this route gives.
    pub fn matches(&self, tenant: &str, request: &NewRequest) -> bool {
        let tenant_ok = self.tenant.as_deref().is_none_or(|t| t == tenant);
        let agent_ok = self.agent.as_deref().is_none_or(|pattern| {
            let Some(agent) = request.agent.as_deref() else {
                return false;
            };
            match pattern.strip_suffix('*') {
                Some(prefix) => agent.starts_with(prefix),
                None => agent == pattern,
            }
        });
        let tags_ok = self.tags.iter().all(|t| request.tags.contains(t));
        let kinds_ok = self.kinds.is_empty()
            || request
                .questions
                .iter()
                .any(|q| self.kinds.iter().any(|k| k == q.kind.name()));
        tenant_ok && agent_ok && tags_ok && kinds_ok
    }
}

/// The warning period (seconds before the deadline) of a request of `tenant`: the first matching
/// route's `warn_before` that reads as a duration (the configuration check refuses one that
/// does not); `None` when no matching route gives one.
pub fn warn_before_for(routes: &[Route], tenant: &str, request: &NewRequest) -> Option<u64> {
    routes
        .iter()
        .filter(|r| r.matches(tenant, request))
        .find_map(|r| {
            let text = r.warn_before.as_deref()?;
            clarify_core::text::parse_duration_seconds(text).ok()
        })
}

/// The channels a request of `tenant` is announced on: those of every route it matches, each
/// once, in the order routes and their channels are listed.
pub fn channels_for(routes: &[Route], tenant: &str, request: &NewRequest) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for route in routes.iter().filter(|r| r.matches(tenant, request)) {
        for channel in &route.channels {
            if !out.contains(channel) {
                out.push(channel.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(raw: serde_json::Value) -> NewRequest {
        match clarify_core::parse_request(&raw, &clarify_core::Limits::default()) {
            Ok(r) => r,
            Err(e) => panic!("test request: {e}"),
        }
    }

    #[test]
    fn routes_match_by_every_filter_given() {
        let deploy = request(serde_json::json!({
            "questions": [{"text": "Deploy?", "kind": "approval", "action": {"name": "deploy"}}],
            "agent": "deploy-bot", "tags": ["prod", "eu"]}));
        let chat = request(serde_json::json!({"question": "Lunch?", "agent": "chat"}));
        let anonymous = request(serde_json::json!({"question": "Who am I?"}));
        let route = |t: Option<&str>, agent: Option<&str>, tags: &[&str], kinds: &[&str]| Route {
            channels: vec!["ops".to_owned()],
            tenant: t.map(str::to_owned),
            agent: agent.map(str::to_owned),
            tags: tags.iter().map(|s| (*s).to_owned()).collect(),
            kinds: kinds.iter().map(|s| (*s).to_owned()).collect(),
            warn_before: None,
        };
        // (route, matches deploy, matches chat, matches a request without an agent)
        let cases = [
            (route(None, None, &[], &[]), true, true, true),
            (route(Some("default"), None, &[], &[]), true, true, true),
            (route(Some("other"), None, &[], &[]), false, false, false),
            (route(None, Some("deploy-*"), &[], &[]), true, false, false),
            (
                route(None, Some("deploy-bot"), &[], &[]),
                true,
                false,
                false,
            ),
            (route(None, Some("deploy"), &[], &[]), false, false, false),
            (route(None, Some("*"), &[], &[]), true, true, false),
            (route(None, None, &["prod"], &[]), true, false, false),
            (route(None, None, &["prod", "us"], &[]), false, false, false),
            (route(None, None, &[], &["approval"]), true, false, false),
            (
                route(None, None, &[], &["open", "single"]),
                false,
                true,
                true,
            ),
        ];
        for (route, on_deploy, on_chat, on_anonymous) in cases {
            assert_eq!(
                route.matches("default", &deploy),
                on_deploy,
                "{route:?} on deploy"
            );
            assert_eq!(
                route.matches("default", &chat),
                on_chat,
                "{route:?} on chat"
            );
            assert_eq!(
                route.matches("default", &anonymous),
                on_anonymous,
                "{route:?} without an agent"
            );
        }
    }

    #[test]
    fn the_first_matching_route_with_a_warning_period_gives_it() {
        let routes = [
            Route {
                channels: vec!["ops".to_owned()],
                tags: vec!["prod".to_owned()],
                warn_before: Some("30m".to_owned()),
                ..Route::default()
            },
            Route {
                channels: vec!["ops".to_owned()],
                warn_before: Some("0".to_owned()),
                ..Route::default()
            },
        ];
        let prod = request(serde_json::json!({"question": "Ship?", "tags": ["prod"]}));
        let dev = request(serde_json::json!({"question": "Ship?"}));
        assert_eq!(warn_before_for(&routes, "default", &prod), Some(1_800));
        assert_eq!(warn_before_for(&routes, "default", &dev), Some(0));
        assert_eq!(warn_before_for(&routes[..1], "default", &dev), None);
    }

    #[test]
    fn each_channel_is_named_once_in_route_order() {
        let routes = [
            Route {
                channels: vec!["push".to_owned(), "ops".to_owned()],
                ..Route::default()
            },
            Route {
                channels: vec!["ops".to_owned(), "mail".to_owned()],
                ..Route::default()
            },
            Route {
                channels: vec!["never".to_owned()],
                tenant: Some("other".to_owned()),
                ..Route::default()
            },
        ];
        let r = request(serde_json::json!({"question": "Ship?"}));
        assert_eq!(
            channels_for(&routes, "default", &r),
            ["push", "ops", "mail"]
        );
    }
}
