//! The insights rollup's histograms, month splits and summaries, checked against the day rows
//! they stand for.

use super::*;

fn hist(times: &[f64]) -> Histogram {
    let mut h = Histogram::default();
    for t in times {
        h.record(*t);
    }
    h
}

#[test]
fn quantiles_are_exact_on_bucket_bounds_and_interpolated_between() {
    let h = hist(&[10.0, 30.0, 60.0, 120.0]);
    assert_eq!(h.quantile(0.5), Some(30.0));
    assert_eq!(h.quantile(0.9), Some(120.0));
    assert_eq!(h.quantile(0.25), Some(10.0));
    // Two times in (20, 30]: the first of them is placed halfway.
    assert_eq!(hist(&[25.0, 26.0]).quantile(0.5), Some(25.0));
    assert_eq!(Histogram::default().quantile(0.5), None);
    // Slower than a week: the week.
    assert_eq!(hist(&[1e7]).quantile(0.5), Some(604_800.0));
}

/// Texts near `text` (a histogram's) that are not histograms: a count missing, extra, signed,
/// fractional, overflowing or split by a space, a stray comma, too few counts, none.
fn not_histograms(text: &str) -> Vec<String> {
    vec![
        format!("{text},0"),
        text.replacen("0,", ",", 1),
        text.replacen('0', "-0", 1),
        text.replacen('0', "0.0", 1),
        text.replacen('0', "18446744073709551616", 1),
        text.replacen('0', "0 0", 1),
        format!("{text},"),
        format!(",{text}"),
        "1,2".to_owned(),
        "x".to_owned(),
        String::new(),
    ]
}

#[test]
fn a_histogram_round_trips_through_its_text() {
    let h = hist(&[0.2, 3.0, 3.0, 9e6]);
    assert_eq!(Histogram::from_text(&h.to_text()), Some(h.clone()));
    // Spaces around a count are read (PostgreSQL's array output has none, a hand edit may);
    // a missing, extra, signed, fractional or overflowing count is not a histogram.
    let spaced = h.to_text().replace(',', " , ");
    assert_eq!(Histogram::from_text(&spaced), Some(h.clone()));
    for bad in not_histograms(&h.to_text()) {
        assert_eq!(Histogram::from_text(&bad), None, "{bad}");
    }
    let mut big = Histogram::default();
    big.0[0] = u64::MAX;
    assert_eq!(Histogram::from_text(&big.to_text()), Some(big));
}

#[test]
fn one_more_time_bumps_its_bucket_in_the_stored_text_and_nothing_else() {
    let h = hist(&[0.2, 3.0, 3.0, 9e6]);
    for seconds in [0.5, 3.0, 100.0, 9e6] {
        let mut want = h.clone();
        want.record(seconds);
        let bucket = hist(&[seconds])
            .only_bucket()
            .ok()
            .flatten()
            .expect("one time");
        let bumped = Histogram::bump_text(h.to_text().as_bytes(), bucket).expect("a histogram");
        assert_eq!(bumped, want.to_text(), "{seconds} s");
        // The stored text may have spaces around its counts (a hand edit): still bumped, the
        // rest kept as it was.
        let spaced = h.to_text().replace(',', " , ");
        let bumped = Histogram::bump_text(spaced.as_bytes(), bucket).expect("a histogram");
        assert_eq!(
            Histogram::from_text(&bumped),
            Some(want.clone()),
            "{bumped}"
        );
    }
    // What `from_bytes` refuses, and a bucket past the last, are refused.
    let text = h.to_text();
    for bad in not_histograms(&text) {
        assert_eq!(Histogram::bump_text(bad.as_bytes(), 0), None, "{bad}");
    }
    assert_eq!(Histogram::bump_text(text.as_bytes(), BUCKETS), None);
    let mut full = Histogram::default();
    full.0[3] = u64::MAX;
    assert_eq!(Histogram::bump_text(full.to_text().as_bytes(), 3), None);
}

#[test]
fn a_single_time_texts_as_its_histogram_does() {
    assert_eq!(Histogram::single_text(None), Histogram::default().to_text());
    for seconds in [0.0, 1.5, 700.0, 1e7] {
        let one = hist(&[seconds]);
        let bucket = one.only_bucket().ok().flatten();
        assert_eq!(Histogram::single_text(bucket), one.to_text());
    }
    assert_eq!(hist(&[]).only_bucket(), Ok(None));
    assert!(hist(&[1.0, 2.0]).only_bucket().is_err());
}

#[test]
fn fast_approvals_count_up_to_the_bound() {
    assert_eq!(hist(&[1.0, 9.9, 10.0, 10.1, 400.0]).at_most(10.0), 3);
}

fn day(y: i32, m: u32, d: u32) -> i64 {
    day_of_date(NaiveDate::from_ymd_opt(y, m, d).expect("a date"))
}

#[test]
fn a_range_splits_into_its_whole_months_and_the_days_at_either_edge() {
    // A year back from a day in November: December to October whole, two edge stretches.
    assert_eq!(
        split(day(2025, 11, 26), day(2026, 11, 26)),
        Some(Split {
            months: (day(2025, 12, 1), day(2026, 10, 1)),
            edges: vec![
                (day(2025, 11, 26), day(2025, 11, 30)),
                (day(2026, 11, 1), day(2026, 11, 26)),
            ],
        })
    );
    // Exactly whole months: no edges; February of a leap year ends on the 29th.
    assert_eq!(
        split(day(2024, 1, 1), day(2024, 2, 29)),
        Some(Split {
            months: (day(2024, 1, 1), day(2024, 2, 1)),
            edges: vec![],
        })
    );
    assert_eq!(
        split(day(2024, 1, 1), day(2024, 1, 31)),
        Some(Split {
            months: (day(2024, 1, 1), day(2024, 1, 1)),
            edges: vec![],
        })
    );
    // No whole month inside: read day by day.
    assert_eq!(split(day(2026, 1, 15), day(2026, 2, 20)), None);
    assert_eq!(split(day(2026, 1, 1), day(2026, 1, 30)), None);
    assert_eq!(split(day(2026, 11, 1), day(2026, 11, 1)), None);
}

#[test]
fn a_broad_reading_from_the_coarser_rollups_equals_the_one_from_the_day_rows() {
    // A deterministic year of rows over many combinations, some outside the range.
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut dice = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let (first, last) = (day(2025, 3, 17), day(2026, 3, 9));
    let mut rows: HashMap<Key, Cell> = HashMap::new();
    for _ in 0..20_000 {
        let ending = Ending::ALL[dice(Ending::ALL.len() as u64) as usize];
        let person = matches!(ending.status(), Status::Answered | Status::Skipped);
        let key = Key {
            tenant: "t".into(),
            tag: String::new(),
            day: first - 20 + dice((last - first + 40) as u64) as i64,
            agent: format!("agent-{}", dice(3)),
            tool: if dice(5) == 0 {
                String::new()
            } else {
                format!("tool-{}", dice(6))
            },
            surface: if person {
                format!("surface-{}", dice(3))
            } else {
                String::new()
            },
            responder: if person {
                format!("person-{}", dice(7))
            } else {
                String::new()
            },
            ending,
        };
        let mut cell = Cell {
            n: 1,
            times: Histogram::default(),
        };
        if person {
            cell.times.record(dice(100_000) as f64 / 10.0);
        }
        fold(&mut rows, vec![(key, cell)]);
    }
    let within = |from: i64, to: i64| -> Vec<(Key, Cell)> {
        rows.iter()
            .filter(|(k, _)| k.day >= from && k.day <= to)
            .map(|(k, c)| (k.clone(), c.clone()))
            .collect()
    };
    let now = DateTime::<Utc>::UNIX_EPOCH + TimeDelta::days(last + 1);
    let (from, to) = (date_of(first), date_of(last));
    let by_days = summarize(from, to, within(first, last), &[], now);

    let plan = split(first, last).expect("whole months inside");
    let months = Grain::Month.of(&rows);
    let mut sections: Vec<(Key, Cell)> = months
        .into_iter()
        .filter(|(k, _)| k.day >= plan.months.0 && k.day <= plan.months.1)
        .collect();
    for (a, b) in &plan.edges {
        sections.extend(within(*a, *b));
    }
    let totals: Vec<(Key, Cell)> = Grain::Total
        .of(&within(first, last).into_iter().collect())
        .into_iter()
        .collect();
    let by_grains = summarize_split(from, to, totals, sections, &[], now);
    assert!(by_days.by_tool.len() > 3 && by_days.time_to_decision.count > 1_000);
    assert_eq!(by_grains, by_days);
}
