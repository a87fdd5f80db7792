//! The insights as charts, drawn here as SVG and HTML: the inbox's Insights page and `clarify
//! report`'s HTML file show the same markup.
//!
//! Drawn on the server (or by `clarify report`) rather than by a charting script in the browser: the page then needs no
//! script at all (it works with script off, prints, and is the same file `clarify report`
//! writes, which must open with nothing fetched), there is no library to vendor and keep up to
//! date, and it stays inside the inbox's Content-Security-Policy without a change: SVG inline
//! in HTML is markup, not script, and colours are presentation attributes (`fill`, `stroke`)
//! or classes of the stylesheet, never `style` attributes, which the policy refuses. Every
//! chart also says its figures in text (labels and numbers beside each bar, a table under the
//! series), so nothing is told by colour alone.

use std::fmt::Write;

use clarify_model::{DayFigures, Insights};

use crate::html::escape;

/// The charts' stylesheet: served as an asset to the Insights page, inlined into a report.
pub const STYLE: &str = include_str!("../assets/insights.css");

/// The colours of the outcomes (approve, revise, deny, expired, other), readable on white and
/// in print.
const APPROVE: &str = "#2f7d32";
const REVISE: &str = "#b26a00";
const DENY: &str = "#c62828";
const EXPIRED: &str = "#6d6d6d";
const NEUTRAL: &str = "#3b5bab";

/// A duration in seconds, short: `45 s`, `3.5 min`, `2.1 h`, `1.5 d`.
pub fn short_duration(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{} s", trim(seconds))
    } else if seconds < 3600.0 {
        format!("{} min", trim(seconds / 60.0))
    } else if seconds < 86_400.0 {
        format!("{} h", trim(seconds / 3600.0))
    } else {
        format!("{} d", trim(seconds / 86_400.0))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

fn or_dash(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), short_duration)
}

/// The headline figures as a list of tiles.
pub fn tiles(i: &Insights) -> String {
    let count = |k: &str| i.by_status.get(k).copied().unwrap_or(0);
    let t = &i.time_to_decision;
    let tiles = [
        ("Decided by people", t.count.to_string()),
        ("Time to decide, median", or_dash(t.p50)),
        ("90th percentile", or_dash(t.p90)),
        ("99th percentile", or_dash(t.p99)),
        ("Answered", count("answered").to_string()),
        ("Skipped", count("skipped").to_string()),
        ("Timed out", count("expired").to_string()),
        ("Defaults applied", i.defaults_applied.to_string()),
        ("Cancelled", count("cancelled").to_string()),
        ("Pending now", count("pending").to_string()),
    ];
    let mut out = String::from("<dl class=\"tiles\">");
    for (label, value) in tiles {
        let _ = write!(
            out,
            "<div><dt>{}</dt><dd>{}</dd></div>",
            escape(label),
            escape(&value)
        );
    }
    out.push_str("</dl>");
    out
}

/// Time to decision per day: the median and the 90th percentile as two lines (the 90th
/// dashed), with the day's decisions as bars below them; days without decisions break the
/// lines. Followed by the same figures as a table, folded away.
pub fn time_series(days: &[DayFigures]) -> String {
    const W: f64 = 640.0;
    const H: f64 = 260.0;
    const LEFT: f64 = 64.0;
    const RIGHT: f64 = 12.0;
    const TOP: f64 = 16.0;
    const PLOT: f64 = 160.0;
    const BARS: f64 = 40.0;
    let n = days.len().max(1);
    let step = (W - LEFT - RIGHT) / n as f64;
    let x = |i: usize| LEFT + step * (i as f64 + 0.5);
    let top = days
        .iter()
        .filter_map(|d| d.p90.or(d.p50))
        .fold(0.0_f64, f64::max);
    let ceiling = nice_ceiling(top.max(1.0));
    let y = |v: f64| TOP + PLOT - PLOT * (v / ceiling).min(1.0);
    let most = days.iter().map(|d| d.count).max().unwrap_or(0).max(1);
    let mut svg = format!(
        "<svg class=\"chart series\" viewBox=\"0 0 {W} {H}\" role=\"img\" \
         aria-labelledby=\"series-title\" xmlns=\"http://www.w3.org/2000/svg\">\
         <title id=\"series-title\">Time to decision per day: median and 90th percentile</title>"
    );
    for k in 0..=4 {
        let v = ceiling * f64::from(k) / 4.0;
        let yy = y(v);
        let _ = write!(
            svg,
            "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#d0d0d0\" \
             stroke-width=\"1\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" \
             font-size=\"13\" fill=\"#444\">{}</text>",
            W - RIGHT,
            LEFT - 6.0,
            yy + 4.0,
            escape(&short_duration(v))
        );
    }
    let bars_top = TOP + PLOT + 18.0;
    for (i, d) in days.iter().enumerate() {
        if d.count == 0 {
            continue;
        }
        let h = BARS * d.count as f64 / most as f64;
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"#b8c4e6\">\
             <title>{}: {} decisions</title></rect>",
            x(i) - step * 0.4,
            bars_top + BARS - h,
            (step * 0.8).max(1.0),
            d.day,
            d.count
        );
    }
    for (pick, colour, dash) in [(0, NEUTRAL, ""), (1, DENY, " stroke-dasharray=\"6 4\"")] {
        let mut runs: Vec<Vec<String>> = vec![Vec::new()];
        for (i, d) in days.iter().enumerate() {
            let value = if pick == 0 { d.p50 } else { d.p90 };
            match (value, runs.last_mut()) {
                (Some(v), Some(run)) => run.push(format!("{:.1},{:.1}", x(i), y(v))),
                _ => runs.push(Vec::new()),
            }
        }
        for run in runs.iter().filter(|r| !r.is_empty()) {
            if run.len() == 1 {
                let (cx, cy) = run[0].split_once(',').unwrap_or(("0", "0"));
                let _ = write!(
                    svg,
                    "<circle cx=\"{cx}\" cy=\"{cy}\" r=\"3\" fill=\"{colour}\"/>"
                );
            } else {
                let _ = write!(
                    svg,
                    "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" \
                     stroke-width=\"2.5\"{dash}/>",
                    run.join(" ")
                );
            }
        }
    }
    if let (Some(first), Some(last)) = (days.first(), days.last()) {
        let _ = write!(
            svg,
            "<text x=\"{LEFT}\" y=\"{H}\" font-size=\"13\" fill=\"#444\">{}</text>\
             <text x=\"{}\" y=\"{H}\" font-size=\"13\" fill=\"#444\" text-anchor=\"end\">{}</text>",
            first.day,
            W - RIGHT,
            last.day
        );
    }
    svg.push_str("</svg>");
    let mut out = format!(
        "<figure class=\"chart\">{svg}<figcaption><span class=\"key\">\
         <svg viewBox=\"0 0 24 8\" width=\"24\" height=\"8\" aria-hidden=\"true\">\
         <line x1=\"0\" x2=\"24\" y1=\"4\" y2=\"4\" stroke=\"{NEUTRAL}\" stroke-width=\"3\"/></svg> \
         median</span> <span class=\"key\"><svg viewBox=\"0 0 24 8\" width=\"24\" height=\"8\" \
         aria-hidden=\"true\"><line x1=\"0\" x2=\"24\" y1=\"4\" y2=\"4\" stroke=\"{DENY}\" \
         stroke-width=\"3\" stroke-dasharray=\"6 4\"/></svg> 90th percentile</span> \
         <span class=\"key\">bars: decisions per day</span></figcaption></figure>"
    );
    out.push_str(
        "<details class=\"figures\"><summary>The figures per day</summary><table>\
         <thead><tr><th>Day</th><th>Resolved</th><th>Decided by people</th><th>Median</th>\
         <th>90th</th></tr></thead><tbody>",
    );
    for d in days.iter().rev().filter(|d| d.resolved > 0) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            d.day,
            d.resolved,
            d.count,
            escape(&or_dash(d.p50)),
            escape(&or_dash(d.p90))
        );
    }
    out.push_str("</tbody></table></details>");
    out
}

/// A round number at or above `v` for an axis: 1, 2 or 5 times a power of ten of seconds,
/// or whole minutes and hours past them.
fn nice_ceiling(v: f64) -> f64 {
    const STEPS: [f64; 16] = [
        5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0, 14_400.0,
        28_800.0, 86_400.0, 604_800.0,
    ];
    STEPS.into_iter().find(|s| *s >= v).unwrap_or(v)
}

/// One bar of a bar chart: a label, its segments (name, count, colour) and a note after it.
#[derive(Debug)]
pub struct Bar {
    pub label: String,
    pub segments: Vec<(&'static str, u64, &'static str)>,
    pub note: String,
}

/// Horizontal stacked bars as a table: the label and the figures are HTML text (so they stay
/// readable at any width), each bar an SVG scaled to the largest total.
pub fn bars(title: &str, legend: &[(&str, &str)], rows: &[Bar]) -> String {
    let most = rows
        .iter()
        .map(|r| r.segments.iter().map(|s| s.1).sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1);
    let mut out = format!("<figure class=\"chart\"><figcaption>{}", escape(title));
    for (name, colour) in legend {
        let _ = write!(
            out,
            " <span class=\"key\"><svg viewBox=\"0 0 10 10\" width=\"10\" height=\"10\" \
             aria-hidden=\"true\"><rect width=\"10\" height=\"10\" fill=\"{colour}\"/></svg> {}</span>",
            escape(name)
        );
    }
    out.push_str("</figcaption>");
    if rows.is_empty() {
        out.push_str("<p class=\"empty\">Nothing in this range.</p></figure>");
        return out;
    }
    out.push_str("<table class=\"bars\"><tbody>");
    for row in rows {
        let mut svg = String::from(
            "<svg viewBox=\"0 0 100 10\" preserveAspectRatio=\"none\" class=\"bar\" \
             aria-hidden=\"true\">",
        );
        let mut at = 0.0;
        for (name, count, colour) in &row.segments {
            if *count == 0 {
                continue;
            }
            let w = 100.0 * *count as f64 / most as f64;
            let _ = write!(
                svg,
                "<rect x=\"{at:.2}\" width=\"{w:.2}\" height=\"10\" fill=\"{colour}\">\
                 <title>{}: {count}</title></rect>",
                escape(name)
            );
            at += w;
        }
        svg.push_str("</svg>");
        let _ = write!(
            out,
            "<tr><th scope=\"row\">{}</th><td class=\"bar\">{svg}</td><td class=\"note\">{}</td></tr>",
            escape(&row.label),
            escape(&row.note)
        );
    }
    out.push_str("</tbody></table></figure>");
    out
}

/// Every chart of the figures, in the order the page and the report show them.
pub fn all(i: &Insights) -> String {
    let mut out = tiles(i);
    out.push_str("<h2>Time to decision</h2>");
    out.push_str(&time_series(&i.time_to_decision.per_day));
    out.push_str("<h2>Decisions per tool</h2>");
    let tools: Vec<Bar> = i
        .by_tool
        .iter()
        .map(|t| Bar {
            label: t.tool.clone(),
            segments: vec![
                ("approve", t.approve, APPROVE),
                ("revise", t.revise, REVISE),
                ("deny", t.deny, DENY),
                ("timed out", t.expired, EXPIRED),
            ],
            note: format!(
                "{} approve · {} revise · {} deny · {} timed out ({} default) · {} approved within 10 s · median approval {}",
                t.approve,
                t.revise,
                t.deny,
                t.expired,
                t.defaults,
                t.fast_approvals,
                or_dash(t.approve_p50)
            ),
        })
        .collect();
    out.push_str(&bars(
        "Approvals by tool",
        &[
            ("approve", APPROVE),
            ("revise", REVISE),
            ("deny", DENY),
            ("timed out", EXPIRED),
        ],
        &tools,
    ));
    out.push_str("<h2>Who decides</h2>");
    let people: Vec<Bar> = i
        .by_responder
        .iter()
        .map(|r| Bar {
            label: r.responder.clone(),
            segments: vec![
                ("approve", r.approve, APPROVE),
                ("revise", r.revise, REVISE),
                ("deny", r.deny, DENY),
                (
                    "other",
                    r.decisions.saturating_sub(r.approve + r.revise + r.deny),
                    NEUTRAL,
                ),
            ],
            note: format!(
                "{} decisions · median {} · 90th {}",
                r.decisions,
                or_dash(r.p50),
                or_dash(r.p90)
            ),
        })
        .collect();
    out.push_str(&bars(
        "Decisions by responder",
        &[
            ("approve", APPROVE),
            ("revise", REVISE),
            ("deny", DENY),
            ("other answers and skips", NEUTRAL),
        ],
        &people,
    ));
    let surfaces: Vec<Bar> = i
        .by_surface
        .iter()
        .map(|s| Bar {
            label: s.surface.clone(),
            segments: vec![("decisions", s.decisions, NEUTRAL)],
            note: s.decisions.to_string(),
        })
        .collect();
    out.push_str(&bars("Decisions by surface", &[], &surfaces));
    out.push_str("<h2>Waiting now</h2>");
    let ages: Vec<Bar> = i
        .pending_by_age
        .iter()
        .map(|a| Bar {
            label: age_label(a.from_seconds, a.to_seconds),
            segments: vec![("pending", a.count, EXPIRED)],
            note: a.count.to_string(),
        })
        .collect();
    out.push_str(&bars(
        "Pending requests by how long they have waited",
        &[],
        &ages,
    ));
    out
}

fn age_label(from: u64, to: Option<u64>) -> String {
    let d = |s: u64| short_duration(s as f64);
    match to {
        Some(to) if from == 0 => format!("under {}", d(to)),
        Some(to) => format!("{} to {}", d(from), d(to)),
        None => format!("over {}", d(from)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_short() {
        assert_eq!(short_duration(45.0), "45 s");
        assert_eq!(short_duration(90.0), "1.5 min");
        assert_eq!(short_duration(7200.0), "2 h");
        assert_eq!(short_duration(129_600.0), "1.5 d");
    }

    #[test]
    fn bars_escape_their_labels_and_scale_to_the_largest() {
        let html = bars(
            "T",
            &[],
            &[
                Bar {
                    label: "<b>x</b>".into(),
                    segments: vec![("a", 2, APPROVE)],
                    note: "2".into(),
                },
                Bar {
                    label: "y".into(),
                    segments: vec![("a", 1, APPROVE)],
                    note: "1".into(),
                },
            ],
        );
        assert!(html.contains("&lt;b&gt;x&lt;/b&gt;"));
        assert!(!html.contains("<b>x"));
        assert!(html.contains("width=\"100.00\""));
        assert!(html.contains("width=\"50.00\""));
        assert!(
            !html.contains("style="),
            "no style attribute: the CSP refuses them"
        );
    }
}
