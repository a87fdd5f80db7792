// The client against a real `clarify serve`: every question kind asked and answered, errors,
// pages, grants, and Ask's cancellation.

package clarify_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	clarify "github.com/clarify-hitl/clarify/sdks/go"
	"github.com/clarify-hitl/clarify/sdks/go/internal/clarifytest"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestEveryQuestionKindAskedAndAnswered(t *testing.T) {
	s := clarifytest.Start(t)
	agent := s.Client("agent", "go-agent")
	alice := s.Client("responder", "alice")
	ctx := ctxFor(t, 60*time.Second)

	questions := []clarify.Question{
		{ID: "db", Text: "Which database?", Kind: clarify.KindSingle, Options: []clarify.Choice{{Label: "Postgres"}, {Label: "SQLite"}}, Recommended: "postgres"},
		{ID: "regions", Text: "Which regions?", Kind: clarify.KindMulti, Options: []clarify.Choice{{Label: "eu"}, {Label: "us"}, {Label: "asia"}}},
		{ID: "why", Text: "Why?"},
		{ID: "deploy", Text: "Deploy?", Kind: clarify.KindApproval,
			Action: &clarify.Action{Name: "deploy", Arguments: map[string]any{"env": "prod", "replicas": 3}},
			Scopes: []string{clarify.ScopeOnce, clarify.ScopeSession}, AllowEdit: true},
		{ID: "offsite", Text: "Book the offsite", Kind: clarify.KindForm, Fields: []clarify.Field{
			{ID: "budget", Label: "Budget (EUR)", Type: "number", Maximum: ptr(5000.0)},
			{ID: "nights", Label: "Nights", Type: "integer", Default: json.RawMessage("2")},
			{ID: "plan", Label: "Plan", Type: "choice", Options: []clarify.Choice{{Label: "Basic"}, {Label: "Pro"}}},
		}},
	}
	asked := make(chan *clarify.Record, 1)
	clarifytest.Answering(t, alice, "kinds", func(r *clarify.Record) (clarify.Answer, bool) {
		asked <- r
		return clarify.Answer{Answers: map[string]clarify.QuestionAnswer{
			"db":      {Option: r.Questions[0].Options[1].ID},
			"regions": {Options: []string{"eu", "asia"}},
			"why":     {Text: "latency"},
			"deploy": {Decision: clarify.DecisionApprove, Scope: clarify.ScopeSession,
				EditedArguments: map[string]any{"env": "staging", "replicas": 3}, Reason: "not prod yet"},
			"offsite": {Values: map[string]any{"budget": 1200, "plan": "pro"}},
		}}, true
	})
	outcome, err := agent.Ask(ctx, clarify.Request{Questions: questions, Session: "kinds", Context: map[string]any{"ticket": "OPS-7"}})
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	if outcome.Status != clarify.StatusAnswered || outcome.AnsweredBy != "alice" || outcome.AnsweredVia != "api" {
		t.Fatalf("status %q by %q via %q, want answered by alice via api", outcome.Status, outcome.AnsweredBy, outcome.AnsweredVia)
	}
	seen := <-asked
	if got := seen.Questions[0].Options; got[0].ID != "postgres" || seen.Questions[0].Recommended != "postgres" {
		t.Errorf("the validated options lost their ids: %+v", got)
	}
	if shown, _ := seen.Context.(map[string]any); shown["ticket"] != "OPS-7" {
		t.Errorf("the context came back as %#v", seen.Context)
	}

	check := func(id, mode string, text string) *clarify.QuestionOutcome {
		t.Helper()
		q, ok := outcome.Question(id)
		if !ok {
			t.Fatalf("no outcome for question %s", id)
		}
		if q.Mode != mode || (text != "" && q.Text() != text) {
			t.Errorf("question %s: mode %q answer %s, want %q %q", id, q.Mode, q.Answer, mode, text)
		}
		return q
	}
	check("db", "option", "SQLite")
	if got := check("regions", "option", "eu, asia").Labels(); !reflect.DeepEqual(got, []string{"eu", "asia"}) {
		t.Errorf("multi labels %v", got)
	}
	check("why", "text", "latency")
	deploy := check("deploy", "decision", "approve")
	if deploy.Decision != "approve" || deploy.Scope != "session" || deploy.Reason != "not prod yet" || deploy.EditedArguments["env"] != "staging" {
		t.Errorf("approval came back as %+v", deploy)
	}
	var form struct {
		Budget float64 `json:"budget"`
		Nights int     `json:"nights"`
		Plan   string  `json:"plan"`
	}
	if err := check("offsite", "form", "").Values(&form); err != nil || form.Budget != 1200 || form.Nights != 2 || form.Plan == "" {
		t.Errorf("form values %+v (%v), want the budget, the default nights and the plan", form, err)
	}
	if _, ok := outcome.Question("nope"); ok {
		t.Error("an unknown question id was found")
	}
}

func TestOtherSkipAndTheStatusesThatAreNotAnswers(t *testing.T) {
	s := clarifytest.Start(t)
	agent := s.Client("agent", "go-agent")
	alice := s.Client("responder", "alice")
	ctx := ctxFor(t, 60*time.Second)

	r, err := agent.Create(ctx, clarify.Request{Questions: []clarify.Question{{Text: "Ship it?", Options: []clarify.Choice{{Label: "yes"}, {Label: "no"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := alice.Answer(ctx, r.ID, clarify.AnswerOne(clarify.QuestionAnswer{Other: "tomorrow"}))
	if err != nil || res.Outcome == nil || res.Outcome.Text() != "tomorrow" || res.Outcome.Questions[0].Mode != "other" {
		t.Fatalf("answering with other: %+v %v", res, err)
	}

	skipped, _ := agent.Create(ctx, clarify.Request{Questions: []clarify.Question{{Text: "Skip me?"}}})
	if res, err := alice.Answer(ctx, skipped.ID, clarify.Answer{Skip: true}); err != nil || res.Outcome.Status != clarify.StatusSkipped || res.Outcome.Note == "" {
		t.Fatalf("skip: %+v %v", res, err)
	}
	cancelled, _ := agent.Create(ctx, clarify.Request{Questions: []clarify.Question{{Text: "Cancel me?"}}})
	if rec, err := agent.Cancel(ctx, cancelled.ID); err != nil || rec.Status != clarify.StatusCancelled {
		t.Fatalf("cancel: %+v %v", rec, err)
	}
	expired, err := agent.Ask(ctx, clarify.Request{Questions: []clarify.Question{{Text: "Quick!"}}, TimeoutSeconds: clarify.Seconds(1)})
	if err != nil || expired.Status != clarify.StatusExpired || expired.Note == "" || expired.AnsweredVia != "" {
		t.Fatalf("expiry: %+v %v", expired, err)
	}
	if expired.Text() != "" {
		t.Errorf("an expired outcome has the answer %q", expired.Text())
	}
}

func TestAResponderExtendsADeadlineWithinTheBound(t *testing.T) {
	s := clarifytest.Start(t)
	agent := s.Client("agent", "go-agent")
	alice := s.Client("responder", "alice")
	ctx := ctxFor(t, 60*time.Second)

	r, err := agent.Create(ctx, clarify.Request{Questions: []clarify.Question{{Text: "Still needed?"}}, TimeoutSeconds: clarify.Seconds(600)})
	if err != nil || r.ExpiresAt == nil {
		t.Fatalf("create: %+v %v", r, err)
	}
	moved, err := alice.Extend(ctx, r.ID, 30*time.Minute)
	if err != nil || moved.ExpiresAt == nil {
		t.Fatalf("extend: %+v %v", moved, err)
	}
	if got := moved.ExpiresAt.Sub(*r.ExpiresAt); got != 30*time.Minute {
		t.Errorf("the deadline moved by %v, not 30m", got)
	}
	var tooFar *clarify.Error
	if _, err := alice.Extend(ctx, r.ID, 48*time.Hour); !errors.As(err, &tooFar) || tooFar.Code != "extension_too_long" {
		t.Errorf("two days past a one-day bound: %v", err)
	}
	if _, err := agent.Cancel(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	var late *clarify.Error
	if _, err := alice.Extend(ctx, r.ID, time.Minute); !errors.As(err, &late) || late.Code != "already_resolved" {
		t.Errorf("extending a cancelled request: %v", err)
	}
}

func TestErrorsCarryStatusCodeAndMessage(t *testing.T) {
	s := clarifytest.Start(t)
	agent := s.Client("agent", "go-agent")
	alice := s.Client("responder", "alice")
	ctx := ctxFor(t, 60*time.Second)

	_, err := agent.Get(ctx, "no-such-request")
	var e *clarify.Error
	if !errors.As(err, &e) || e.Status != 404 || e.Code != "not_found" || e.Message == "" {
		t.Fatalf("an unknown id gave %#v", err)
	}

	r, _ := agent.Create(ctx, clarify.Request{Questions: []clarify.Question{{Text: "Pick", Options: []clarify.Choice{{Label: "a"}, {Label: "b"}}}}})
	_, err = alice.Answer(ctx, r.ID, clarify.AnswerOne(clarify.QuestionAnswer{Option: "c"}))
	if !errors.As(err, &e) || e.Status != 422 {
		t.Fatalf("an answer that does not fit gave %v", err)
	}
	if got, _ := agent.Get(ctx, r.ID); got.Status != clarify.StatusPending {
		t.Fatalf("after a refused answer the request is %s", got.Status)
	}
	if _, err := alice.Answer(ctx, r.ID, clarify.AnswerOne(clarify.QuestionAnswer{Option: "a"})); err != nil {
		t.Fatal(err)
	}
	_, err = alice.Answer(ctx, r.ID, clarify.AnswerOne(clarify.QuestionAnswer{Option: "b"}))
	if !errors.As(err, &e) || e.Status != 409 || e.Code != "already_resolved" || e.Record == nil || e.Record.Outcome.Text() != "a" {
		t.Fatalf("a second answer gave %v (record %+v)", err, e.Record)
	}

	_, err = clarify.NewClient(s.URL, "ck_wrong").Get(ctx, r.ID)
	if !errors.As(err, &e) || e.Status != 401 {
		t.Fatalf("a wrong key gave %v", err)
	}
	_, err = alice.Create(ctx, clarify.Request{Questions: []clarify.Question{{Text: "May I?"}}})
	if !errors.As(err, &e) || e.Status != 403 {
		t.Fatalf("a responder creating gave %v", err)
	}
}

func TestAskCancelsItsRequestWhenTheContextEnds(t *testing.T) {
	s := clarifytest.Start(t)
	agent := s.Client("agent", "go-agent")
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err := agent.Ask(ctx, clarify.Request{Questions: []clarify.Question{{Text: "Abandoned?"}}, Session: "abandon"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ask past its context gave %v", err)
	}
	bg := ctxFor(t, 10*time.Second)
	p := agent.List(bg, clarify.ListOptions{Session: "abandon"})
	if !p.Next() || p.Record().Status != clarify.StatusCancelled {
		t.Fatalf("the abandoned request is not cancelled (%v)", p.Err())
	}

	kept := clarify.NewClient(s.URL, s.Key("agent", "keeper"), clarify.WithCancelOnDone(false))
	ctx2, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	_, _ = kept.Ask(ctx2, clarify.Request{Questions: []clarify.Question{{Text: "Kept?"}}, Session: "kept"})
	p = kept.List(bg, clarify.ListOptions{Session: "kept"})
	if !p.Next() || p.Record().Status != clarify.StatusPending {
		t.Fatalf("with WithCancelOnDone(false) the request did not stay pending (%v)", p.Err())
	}
}

func TestListPagesNewestFirstAndWaitReturnsPendingOnTime(t *testing.T) {
	s := clarifytest.Start(t)
	agent := s.Client("agent", "go-agent")
	ctx := ctxFor(t, 60*time.Second)
	var ids []string
	for i := 0; i < 5; i++ {
		r, err := agent.Create(ctx, clarify.Request{Questions: []clarify.Question{{Text: "n"}}, Session: "pages"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	page, err := agent.ListPage(ctx, clarify.ListOptions{Session: "pages", Limit: 2})
	if err != nil || len(page.Requests) != 2 || page.NextCursor == "" {
		t.Fatalf("first page %+v %v", page, err)
	}
	var listed []string
	p := agent.List(ctx, clarify.ListOptions{Session: "pages", Limit: 2})
	for p.Next() {
		listed = append(listed, p.Record().ID)
	}
	want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if p.Err() != nil || !reflect.DeepEqual(listed, want) {
		t.Fatalf("listed %v (%v), want %v", listed, p.Err(), want)
	}

	started := time.Now()
	r, err := agent.Wait(ctx, ids[0], 1200*time.Millisecond)
	if err != nil || r.Status != clarify.StatusPending || time.Since(started) < time.Second {
		t.Fatalf("Wait with a limit: %+v %v after %v", r, err, time.Since(started))
	}
}

func TestAnApprovedSessionScopeIsAGrant(t *testing.T) {
	s := clarifytest.Start(t)
	agent := s.Client("agent", "go-agent")
	alice := s.Client("responder", "alice")
	ctx := ctxFor(t, 60*time.Second)
	action := clarify.Action{Name: "deploy", Arguments: map[string]any{"env": "staging"}}
	check, err := agent.CheckGrant(ctx, action, "s1")
	if err != nil || check.Granted {
		t.Fatalf("before any approval: %+v %v", check, err)
	}
	r, _ := agent.Create(ctx, clarify.Request{Session: "s1", Questions: []clarify.Question{{Text: "Deploy?", Kind: clarify.KindApproval, Action: &action, Scopes: []string{"once", "session"}}}})
	if _, err := alice.Answer(ctx, r.ID, clarify.AnswerOne(clarify.QuestionAnswer{Decision: "approve", Scope: "session"})); err != nil {
		t.Fatal(err)
	}
	check, err = agent.CheckGrant(ctx, action, "s1")
	if err != nil || !check.Granted || check.Grant == nil || check.Grant.Scope != "session" || check.Grant.RequestID != r.ID {
		t.Fatalf("after a session approval: %+v %v", check, err)
	}
	if other, _ := agent.CheckGrant(ctx, action, "s2"); other.Granted {
		t.Error("a session grant let another session through")
	}
}

func ptr[T any](v T) *T { return &v }
