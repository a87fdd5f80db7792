// Asking through failures: Ask waiting through a killed and restarted server, a create whose
// reply was dropped, the event stream resuming without gaps or repeats, and a real webhook
// verified.

package clarify_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clarify "github.com/clarify-hitl/clarify/sdks/go"
	"github.com/clarify-hitl/clarify/sdks/go/internal/clarifytest"
)

// pendingIn waits for the pending requests of a session to number n.
func pendingIn(t *testing.T, c *clarify.Client, session string, n int) []*clarify.Record {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var found []*clarify.Record
		p := c.List(context.Background(), clarify.ListOptions{Session: session, Status: clarify.StatusPending})
		for p.Next() {
			found = append(found, p.Record())
		}
		if len(found) >= n {
			return found
		}
		time.Sleep(30 * time.Millisecond)
	}
	t.Fatalf("%d pending requests did not appear in session %s", n, session)
	return nil
}

func TestAskWaitsThroughAKilledAndRestartedServer(t *testing.T) {
	s := clarifytest.Start(t)
	agent := s.Client("agent", "go-agent")
	alice := s.Client("responder", "alice")
	type result struct {
		outcome *clarify.Outcome
		err     error
	}
	done := make(chan result, 1)
	go func() {
		o, err := agent.Ask(ctxFor(t, 90*time.Second), clarify.Request{
			Questions: []clarify.Question{{Text: "Still there?", Options: []clarify.Choice{{Label: "yes"}, {Label: "no"}}}},
			Session:   "restart",
		})
		done <- result{o, err}
	}()
	pending := pendingIn(t, alice, "restart", 1)

	s.Kill()
	time.Sleep(time.Second) // the long-poll broke; Ask is reconnecting meanwhile
	select {
	case r := <-done:
		t.Fatalf("Ask returned while the server was down: %+v %v", r.outcome, r.err)
	default:
	}
	s.Launch()
	if _, err := alice.Answer(context.Background(), pending[0].ID, clarify.AnswerOne(clarify.QuestionAnswer{Option: "no"})); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("Ask failed across the restart: %v", r.err)
		}
		if r.outcome.RequestID != pending[0].ID || r.outcome.Text() != "no" || r.outcome.AnsweredBy != "alice" {
			t.Fatalf("outcome %+v, want request %s answered no by alice", r.outcome, pending[0].ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Ask did not return within 30 s of the answer")
	}
	var all []string
	p := alice.List(context.Background(), clarify.ListOptions{Session: "restart"})
	for p.Next() {
		all = append(all, p.Record().ID)
	}
	if len(all) != 1 {
		t.Fatalf("the session holds %v, want the one request", all)
	}
}

// replyDropper is a proxy that forwards the first create to the server and then breaks the
// connection instead of returning the reply, as a crash or a network cut would.
func replyDropper(t *testing.T, upstream string) (string, *int32) {
	target, _ := url.Parse(upstream)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var creates int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/requests" && atomic.AddInt32(&creates, 1) == 1 {
			body, _ := io.ReadAll(r.Body)
			forwarded, _ := http.NewRequest(r.Method, upstream+r.URL.Path, bytes.NewReader(body))
			forwarded.Header = r.Header.Clone()
			resp, err := http.DefaultClient.Do(forwarded)
			if err != nil {
				t.Errorf("forwarding the first create: %v", err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &creates
}

func TestARetriedCreateAfterADroppedReplyAsksOnce(t *testing.T) {
	s := clarifytest.Start(t)
	key := s.Key("agent", "go-agent")
	for _, ask := range []bool{false, true} {
		session := "dropped-" + strconv.FormatBool(ask)
		via, creates := replyDropper(t, s.URL)
		c := clarify.NewClient(via, key, clarify.WithBackoff(10*time.Millisecond, 100*time.Millisecond))
		ctx := ctxFor(t, 30*time.Second)
		var id string
		if ask {
			// Ask's create, then its wait, answered by a person once the request shows.
			alice := s.Client("responder", "alice-"+session)
			clarifytest.Answering(t, alice, session, func(*clarify.Record) (clarify.Answer, bool) {
				return clarify.AnswerOne(clarify.QuestionAnswer{Text: "once"}), true
			})
			o, err := c.Ask(ctx, clarify.Request{Questions: []clarify.Question{{Text: "Asked once?"}}, Session: session})
			if err != nil {
				t.Fatal(err)
			}
			id = o.RequestID
		} else {
			r, err := c.Create(ctx, clarify.Request{Questions: []clarify.Question{{Text: "Asked once?"}}, Session: session})
			if err != nil {
				t.Fatal(err)
			}
			id = r.ID
		}
		if atomic.LoadInt32(creates) < 2 {
			t.Fatalf("the create was sent %d times; the dropped reply was not retried", *creates)
		}
		var all []string
		p := clarify.NewClient(s.URL, key).List(ctx, clarify.ListOptions{Session: session})
		for p.Next() {
			all = append(all, p.Record().ID)
		}
		if len(all) != 1 || all[0] != id {
			t.Fatalf("the session holds %v, want only %s", all, id)
		}
	}
}

// nextIn is the next event of one session, skipping the others.
func nextIn(t *testing.T, s *clarify.EventStream, session string) clarify.Event {
	t.Helper()
	for s.Next() {
		if e := s.Event(); e.Record != nil && e.Record.Session == session {
			return e
		}
	}
	t.Fatalf("the event stream ended: %v", s.Err())
	return clarify.Event{}
}

func TestEventsResumeWithNoEventLostOrRepeated(t *testing.T) {
	s := clarifytest.Start(t)
	agent := s.Client("agent", "go-agent")
	alice := s.Client("responder", "alice")
	ctx := ctxFor(t, 60*time.Second)

	stream := agent.Events(ctx, "0")
	first, _ := agent.Create(ctx, clarify.Request{Questions: []clarify.Question{{Text: "First"}}, Session: "ev"})
	created := nextIn(t, stream, "ev")
	stream.Close()
	if created.Type != "request.created" || created.Record.ID != first.ID || created.ID == "" {
		t.Fatalf("first event %+v", created)
	}

	// While nobody listens: an answer and another request.
	if _, err := alice.Answer(ctx, first.ID, clarify.AnswerOne(clarify.QuestionAnswer{Text: "one"})); err != nil {
		t.Fatal(err)
	}
	second, _ := agent.Create(ctx, clarify.Request{Questions: []clarify.Question{{Text: "Second"}}, Session: "ev"})
	resumed := agent.Events(ctx, created.ID)
	defer resumed.Close()
	a := nextIn(t, resumed, "ev")
	b := nextIn(t, resumed, "ev")
	if a.Type != "request.answered" || a.Record.ID != first.ID || a.Record.Outcome.Text() != "one" ||
		b.Type != "request.created" || b.Record.ID != second.ID {
		t.Fatalf("after resuming: %s %s, %s %s", a.Type, a.Record.ID, b.Type, b.Record.ID)
	}

	// The stream reconnects by itself through a restart, resuming after the last event it gave.
	s.Stop()
	s.Launch()
	if _, err := alice.Answer(ctx, second.ID, clarify.AnswerOne(clarify.QuestionAnswer{Text: "two"})); err != nil {
		t.Fatal(err)
	}
	third, _ := agent.Create(ctx, clarify.Request{Questions: []clarify.Question{{Text: "Third"}}, Session: "ev"})
	c := nextIn(t, resumed, "ev")
	d := nextIn(t, resumed, "ev")
	if c.Type != "request.answered" || c.Record.ID != second.ID || d.Type != "request.created" || d.Record.ID != third.ID {
		t.Fatalf("across the restart: %s %s, %s %s", c.Type, c.Record.ID, d.Type, d.Record.ID)
	}
	ids := []clarify.Event{created, a, b, c, d}
	for i := 1; i < len(ids); i++ {
		prev, _ := strconv.ParseInt(ids[i-1].ID, 10, 64)
		next, _ := strconv.ParseInt(ids[i].ID, 10, 64)
		if next <= prev {
			t.Fatalf("event ids do not increase: %s then %s", ids[i-1].ID, ids[i].ID)
		}
	}
}

type delivery struct {
	header http.Header
	body   []byte
}

func TestVerifyWebhookAcceptsClarifysSignatureAndRefusesTampering(t *testing.T) {
	received := make(chan delivery, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- delivery{r.Header.Clone(), body}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()
	s := clarifytest.Start(t, "--outbound-allow", "127.0.0.0/8")
	agent := s.Client("agent", "go-agent")
	alice := s.Client("responder", "alice")
	ctx := ctxFor(t, 60*time.Second)

	r, err := agent.Create(ctx, clarify.Request{Questions: []clarify.Question{{Text: "Hook?", Options: []clarify.Choice{{Label: "yes"}, {Label: "no"}}}}, CallbackURL: hook.URL + "/hook"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Answer(ctx, r.ID, clarify.AnswerOne(clarify.QuestionAnswer{Option: "yes"})); err != nil {
		t.Fatal(err)
	}
	var d delivery
	select {
	case d = <-received:
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook delivery within 30 s")
	}
	secret, err := agent.WebhookSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	header := d.header.Get(clarify.SignatureHeader)
	if err := clarify.VerifyWebhook(secret, header, d.body); err != nil {
		t.Fatalf("clarify's own signature was refused: %v", err)
	}
	if d.header.Get(clarify.EventHeader) != "request.answered" || d.header.Get(clarify.DeliveryHeader) == "" {
		t.Errorf("delivery headers %v", d.header)
	}

	refusals := map[string]error{
		"a changed body":     clarify.VerifyWebhook(secret, header, bytes.Replace(d.body, []byte(`"yes"`), []byte(`"no"`), 1)),
		"a wrong secret":     clarify.VerifyWebhook("whsec_wrong", header, d.body),
		"no header":          clarify.VerifyWebhook(secret, "", d.body),
		"a malformed header": clarify.VerifyWebhook(secret, "v1=abc", d.body),
	}
	signedAt, _ := strconv.ParseInt(strings.TrimPrefix(strings.Split(header, ",")[0], "t="), 10, 64)
	at := time.Unix(signedAt, 0)
	refusals["an old timestamp"] = clarify.VerifyWebhookAt(secret, header, d.body, at.Add(301*time.Second), clarify.WebhookTolerance)
	for what, want := range map[time.Duration]string{301 * time.Second: "signed 301 s ago,", -301 * time.Second: "signed 301 s in the future,"} {
		if err := clarify.VerifyWebhookAt(secret, header, d.body, at.Add(what), clarify.WebhookTolerance); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a signature %v off: %v, want it to say %q", what, err, want)
		}
	}
	for what, err := range refusals {
		var e *clarify.Error
		if !errors.As(err, &e) || e.Code != clarify.CodeInvalidSignature {
			t.Errorf("%s was not refused: %v", what, err)
		}
	}
	if err := clarify.VerifyWebhookAt(secret, header, d.body, at.Add(299*time.Second), clarify.WebhookTolerance); err != nil {
		t.Errorf("a delivery within the tolerance was refused: %v", err)
	}
	if !strings.Contains(string(d.body), r.ID) {
		t.Errorf("the delivery does not carry the request id: %s", d.body)
	}
}
