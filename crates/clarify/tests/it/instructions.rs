//! The server's instructions per HTTP create and per HTTP answer stay within a budget, so a
//! change that makes every round trip dearer fails here instead of showing up months later as
//! a lower throughput figure.
//!
//! The count is the HTTP benchmark's `instructions` mode (`benches/http/callgrind.rs`, included
//! below): this test's debug build of `clarify serve` on a fresh SQLite file under
//! `valgrind --tool=callgrind`, 20 plain round trips of warm-up, then 50 creates and 50 round
//! trips counted, every thread included, less the clock's work in the windows (the server's
//! idle rate times each window's length, which a loaded machine stretches). A debug build, because the workspace's tests build one and a
//! release build would add minutes; it spends several times a release build's instructions,
//! but on the same work, so what a change adds shows in both. Without valgrind the test says it
//! skips (a failure under `CLARIFY_REQUIRE_SERVICES=1`, as CI sets it).
//!
//! The budgets, and how they were chosen, are in BENCHMARKS.md ("Instructions per HTTP round
//! trip"): the count measured when they were set, plus a sixth to a ninth for the differences
//! between compilers and the clock-driven work that falls into the windows. When a feature
//! must cost more, raise the budget in the same change and say why there.

#[path = "../../benches/http/callgrind.rs"]
mod callgrind;

/// Instructions one HTTP create may cost in the debug build, less the clock's work: about
/// 569,000 measured when set (`744b1e2`), plus about a sixth.
const CREATE_BUDGET: u64 = 665_000;
/// Instructions one HTTP answer may cost in the debug build, less the clock's work: about
/// 641,000 measured when set (`744b1e2`), plus about a ninth; with the receipt signed by
/// `ed25519-dalek` again, as before `b66dd76`, an answer costs about 180,000 more and fails it.
const ANSWER_BUDGET: u64 = 715_000;

#[tokio::test(flavor = "multi_thread")]
async fn a_round_trip_stays_within_its_instruction_budget() {
    if let Some(why) = callgrind::unavailable() {
        assert!(
            std::env::var("CLARIFY_REQUIRE_SERVICES").as_deref() != Ok("1"),
            "the instruction budget needs valgrind, and CLARIFY_REQUIRE_SERVICES=1 requires it: {why}"
        );
        eprintln!("skipped: {why}");
        return;
    }
    let dir = crate::support::temp_dir("instructions");
    let count = callgrind::count(env!("CARGO_BIN_EXE_clarify"), &dir, 20, 50)
        .await
        .unwrap_or_else(|e| panic!("the count failed: {e}"));
    let (create, answer) = count.less_clock;
    eprintln!(
        "instructions (debug build): {} per create, {} per answer, {} per round trip; idle {} \
         per second; less the clock's work, {create} per create, {answer} per answer",
        count.create,
        count.answer,
        count.round_trip(),
        count.idle_per_second
    );
    assert!(
        create <= CREATE_BUDGET && answer <= ANSWER_BUDGET,
        "a round trip costs the server more instructions than its budget: {create} per create \
         (budget {CREATE_BUDGET}), {answer} per answer (budget {ANSWER_BUDGET}), less the \
         clock's work. Find what grew with `callgrind_annotate --inclusive=yes {}` and `{}`; \
         if the cost is meant, raise the budget here and in BENCHMARKS.md and say why",
        count.profiles.0.display(),
        count.profiles.1.display()
    );
}
