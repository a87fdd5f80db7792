//! `GET /insights`: the inbox's Insights page, for a signed-in person (the inbox's session, or
//! a responder or admin key). The filters are the address's query, the same names as
//! `GET /v1/insights`, so a view can be bookmarked and shared; a plain GET form changes them.
//! The charts are server-drawn SVG (`clarify_render::charts`, which says why), so the page has no
//! script and is readable at phone width and in print. It sits in the inbox's frame: the same top
//! bar and sections ([`tabs`](crate::web::html::tabs)), stylesheet and buttons.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};

use crate::api::insights::{InsightsParams, read};
use crate::middleware::auth::Caller;
use crate::shared::error::ApiError;
use crate::state::AppState;
use crate::web::html::{insights_page, message_page};
use clarify_render::charts;
use clarify_render::html::escape;

/// The filter form's fields: name, label, input type, hint.
const FIELDS: [(&str, &str, &str, &str); 7] = [
    ("from", "From", "date", ""),
    ("to", "To", "date", ""),
    ("agent", "Agent", "text", "any"),
    ("tool", "Tool", "text", "any"),
    ("tag", "Tag", "text", "any"),
    ("channel", "Surface", "text", "inbox, slack, …"),
    ("responder", "Responder", "text", "anyone"),
];

pub(crate) async fn page(
    State(state): State<AppState>,
    caller: Result<Caller, ApiError>,
    q: Result<Query<InsightsParams>, QueryRejection>,
) -> Response {
    let Ok(caller) = caller else {
        // Not signed in: the inbox signs in, then its Insights tab comes back here.
        return Redirect::to("/").into_response();
    };
    let params = match q {
        Ok(Query(params)) => params,
        Err(e) => {
            return message_page(
                StatusCode::BAD_REQUEST,
                "Insights",
                &format!("The address's filters are not readable: {}", e.body_text()),
            );
        }
    };
    let figures = match read(&state, &caller, &params).await {
        Ok(figures) => figures,
        Err(e) => return message_page(e.status, "Insights", &e.message),
    };
    let mut body = String::from(
        "<div class=\"panel-head\"><h1 id=\"insights-title\">Insights</h1></div>\
         <div class=\"panel-body insights\">\
         <form class=\"filters insights-filters\" method=\"get\" action=\"/insights\" \
         role=\"search\" aria-label=\"Filter the insights\">",
    );
    let shown = |name: &str| -> String {
        let value = match name {
            "from" => figures.from.to_string(),
            "to" => figures.to.to_string(),
            "agent" => params.agent.clone().unwrap_or_default(),
            "tool" => params.tool.clone().unwrap_or_default(),
            "tag" => params.tag.clone().unwrap_or_default(),
            "channel" => params.channel.clone().unwrap_or_default(),
            _ => params.responder.clone().unwrap_or_default(),
        };
        escape(&value)
    };
    for (name, label, kind, hint) in FIELDS {
        body.push_str(&format!(
            "<div><label for=\"insights-{name}\">{label}</label><input type=\"{kind}\" \
             id=\"insights-{name}\" name=\"{name}\" value=\"{}\" placeholder=\"{}\"></div>",
            shown(name),
            escape(hint)
        ));
    }
    body.push_str(
        "<div class=\"filter-actions\"><button type=\"submit\" class=\"btn primary\">Show</button>\
         </div></form>",
    );
    body.push_str(&format!(
        "<p class=\"range\">{} to {} (UTC days). Decisions are counted on the day they were made; \
         pending requests as they are now.</p>",
        figures.from, figures.to
    ));
    body.push_str(&charts::all(&figures));
    body.push_str("</div>");
    insights_page(&body, &caller.key.name, caller.key.role.as_str())
}
