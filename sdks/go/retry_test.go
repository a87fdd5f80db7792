// What the client sends again and what it does not, against a scripted server; and unknown JSON
// fields surviving a round trip through the types.

package clarify_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clarify "github.com/clarify-hitl/clarify/sdks/go"
)

// scripted answers each call with the next of replies (status, Retry-After), then 200, and
// counts the calls.
func scripted(t *testing.T, replies ...[2]int) (*httptest.Server, *int32) {
	var calls int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(atomic.AddInt32(&calls, 1)) - 1
		w.Header().Set("Content-Type", "application/json")
		if n < len(replies) {
			if replies[n][1] > 0 {
				w.Header().Set("Retry-After", string(rune('0'+replies[n][1])))
			}
			w.WriteHeader(replies[n][0])
			_, _ = w.Write([]byte(`{"error": {"code": "scripted", "message": "scripted refusal"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"id": "r1", "status": "pending", "questions": [], "tags": [], "created_at": "2026-01-01T00:00:00Z"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func fast(url string) *clarify.Client {
	return clarify.NewClient(url, "ck_test", clarify.WithBackoff(time.Millisecond, 5*time.Millisecond))
}

func TestRetriesOn5xxAnd429ButNeverOn4xx(t *testing.T) {
	ctx := context.Background()
	srv, calls := scripted(t, [2]int{500, 0}, [2]int{502, 0})
	if _, err := fast(srv.URL).Get(ctx, "r1"); err != nil || *calls != 3 {
		t.Fatalf("two 5xx then 200: %v after %d calls", err, *calls)
	}

	srv, calls = scripted(t, [2]int{429, 1})
	started := time.Now()
	if _, err := fast(srv.URL).Get(ctx, "r1"); err != nil || *calls != 2 {
		t.Fatalf("429 then 200: %v after %d calls", err, *calls)
	}
	if waited := time.Since(started); waited < 900*time.Millisecond {
		t.Errorf("429 with Retry-After: 1 was tried again after %v", waited)
	}

	for _, status := range []int{400, 401, 403, 404, 409, 422} {
		srv, calls = scripted(t, [2]int{status, 0})
		_, err := fast(srv.URL).Get(ctx, "r1")
		var e *clarify.Error
		if !errors.As(err, &e) || e.Status != status || e.Code != "scripted" || *calls != 1 {
			t.Errorf("HTTP %d: %v after %d calls, want the error after one call", status, err, *calls)
		}
	}

	srv, calls = scripted(t, [2]int{503, 0}, [2]int{503, 0}, [2]int{503, 0}, [2]int{503, 0}, [2]int{503, 0})
	_, err := fast(srv.URL).Get(ctx, "r1")
	var e *clarify.Error
	if !errors.As(err, &e) || e.Status != 503 || *calls != 4 {
		t.Errorf("always 503: %v after %d calls, want the error after 1 + 3 retries", err, *calls)
	}

	// An answer may have been acted on when a 500 came back: it is not sent again.
	srv, calls = scripted(t, [2]int{500, 0})
	if _, err := fast(srv.URL).Answer(ctx, "r1", clarify.Answer{Skip: true}); err == nil || *calls != 1 {
		t.Errorf("an answer met by 500: %v after %d calls, want the error after one", err, *calls)
	}
}

func TestNothingListeningIsUnreachableNotSent(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := fast(url).Get(context.Background(), "r1")
	var e *clarify.Error
	if !errors.As(err, &e) || e.Code != clarify.CodeUnreachable || e.Sent || e.Status != 0 || !strings.Contains(e.Message, "clarify serve") {
		t.Fatalf("nothing listening gave %#v", err)
	}
	if !e.Temporary() {
		t.Error("an unreachable server is not Temporary")
	}
}

func TestUnknownFieldsAreKept(t *testing.T) {
	in := `{"id": "r1", "status": "answered", "questions": [{"id": "q1", "text": "Go?", "kind": "single",
	  "options": [{"id": "y", "label": "yes", "colour": "green"}], "hint": {"a": 1}}],
	  "tags": [], "created_at": "2026-01-01T00:00:00Z", "priority": 7,
	  "outcome": {"request_id": "r1", "status": "answered", "resolved_at": "2026-01-01T00:01:00Z",
	    "questions": [{"id": "q1", "question": "Go?", "kind": "single", "choices_offered": ["yes"],
	      "answer": "yes", "mode": "option", "confidence": 0.9}], "answered_via": "api", "trace": "t-1"}}`
	var r clarify.Record
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if string(r.Extra["priority"]) != "7" || string(r.Questions[0].Extra["hint"]) != `{"a": 1}` ||
		string(r.Questions[0].Options[0].Extra["colour"]) != `"green"` || string(r.Outcome.Extra["trace"]) != `"t-1"` ||
		string(r.Outcome.Questions[0].Extra["confidence"]) != "0.9" {
		t.Fatalf("unknown fields were not kept: %+v", r)
	}
	if r.Outcome.AnsweredVia != "api" || r.Outcome.Text() != "yes" {
		t.Fatalf("known fields lost: %+v", r.Outcome)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var again map[string]any
	_ = json.Unmarshal(out, &again)
	q := again["questions"].([]any)[0].(map[string]any)
	if again["priority"] != 7.0 || q["hint"].(map[string]any)["a"] != 1.0 ||
		again["outcome"].(map[string]any)["trace"] != "t-1" {
		t.Fatalf("unknown fields were lost on the way out: %s", out)
	}

	// A request's own extra fields are sent.
	body, _ := json.Marshal(clarify.Request{Questions: []clarify.Question{{Text: "x"}}, Extra: clarify.Extra{"future": json.RawMessage(`true`)}})
	if !strings.Contains(string(body), `"future":true`) {
		t.Fatalf("a request's Extra was not sent: %s", body)
	}
}
