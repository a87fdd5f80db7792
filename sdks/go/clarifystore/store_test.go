// The store adapter against a real `clarify serve`: ask, respond and wait; the errors of the
// Go store; deduplication; recovery across a restart of the Go process; 100 goroutines at once.

package clarifystore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	clarify "github.com/clarify-hitl/clarify/sdks/go"
	"github.com/clarify-hitl/clarify/sdks/go/clarifystore"
	"github.com/clarify-hitl/clarify/sdks/go/internal/clarifytest"
)

// seedStore is the Go clarify store's interface, method for method: a program written against
// it takes a *clarifystore.Store unchanged.
type seedStore interface {
	Ask(ctx context.Context, question, qContext, senderContext string) (string, <-chan clarifystore.Response, error)
	Respond(id, answer string) error
	WaitForResponse(ctx context.Context, id string, ch <-chan clarifystore.Response) (clarifystore.Response, error)
	Cleanup(id string)
	FindPendingByQuestion(ctx context.Context, question string) (string, bool)
	RecoverPending(ctx context.Context, maxAge time.Duration) (clarifystore.RecoverResult, error)
	Close()
}

var _ seedStore = (*clarifystore.Store)(nil)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// open is a store over an admin key (it asks and answers), and the server.
func open(t *testing.T, opts ...clarifystore.Option) (*clarifystore.Store, *clarifytest.Server) {
	s := clarifytest.Start(t)
	store := clarifystore.New(s.Client("admin", "go-store"), opts...)
	t.Cleanup(store.Close)
	return store, s
}

func TestAskRespondAndWait(t *testing.T) {
	var store seedStore
	store, s := open(t)
	ctx := ctxFor(t, 60*time.Second)

	id, ch, err := store.Ask(ctx, "Which colour?", "the logo", "slack:U1234:C5678")
	if err != nil {
		t.Fatal(err)
	}
	record, err := s.Client("agent", "reader").Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if record.Questions[0].Kind != clarify.KindOpen || record.Context != "the logo" || clarifystore.SenderContext(record) != "slack:U1234:C5678" {
		t.Fatalf("the request is %+v", record)
	}
	if !contains(record.Tags, "sender:slack") {
		t.Errorf("tags %v lack the sender's platform", record.Tags)
	}
	if err := store.Respond(id, "blue"); err != nil {
		t.Fatal(err)
	}
	got, err := store.WaitForResponse(ctx, id, ch)
	if err != nil || got.Answer != "blue" {
		t.Fatalf("WaitForResponse: %+v %v", got, err)
	}

	// Answered elsewhere (the inbox, a chat): the long-poll brings it, nothing polls.
	other, _, err := store.Ask(ctx, "Which size?", "", "")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = s.Client("responder", "alice").Answer(context.Background(), other, clarify.AnswerOne(clarify.QuestionAnswer{Text: "large"}))
	}()
	started := time.Now()
	got, err = store.WaitForResponse(ctx, other, nil)
	if err != nil || got.Answer != "large" {
		t.Fatalf("answered through the API: %+v %v", got, err)
	}
	if waited := time.Since(started); waited > 3*time.Second {
		t.Errorf("the answer took %v to arrive", waited)
	}

	if err := store.Respond(id, "red"); !errors.Is(err, clarifystore.ErrAlreadyResponded) {
		t.Errorf("responding twice gave %v", err)
	}
	if err := store.Respond("no-such-id", "red"); !errors.Is(err, clarifystore.ErrNotFound) {
		t.Errorf("responding to an unknown id gave %v", err)
	}
}

func TestCancelledQuestionAndContextEndAndCleanup(t *testing.T) {
	store, s := open(t)
	ctx := ctxFor(t, 60*time.Second)
	id, ch, _ := store.Ask(ctx, "Cancelled?", "", "")
	if _, err := s.Client("agent", "canceller").Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := store.WaitForResponse(ctx, id, ch); !errors.Is(err, clarifystore.ErrNotAnswered) {
		t.Errorf("a cancelled question gave %v", err)
	}

	id, ch, _ = store.Ask(ctx, "Nobody answers", "", "")
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := store.WaitForResponse(short, id, ch); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a wait past its context gave %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := store.WaitForResponse(ctx, id, ch); done <- err }()
	time.Sleep(200 * time.Millisecond)
	store.Cleanup(id)
	select {
	case err := <-done:
		if !errors.Is(err, clarifystore.ErrClosed) {
			t.Errorf("Cleanup ended the wait with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Cleanup did not release the waiter")
	}
	if r, _ := s.Client("agent", "reader").Get(ctx, id); r.Status != clarify.StatusPending {
		t.Errorf("Cleanup changed the question on the server: %s", r.Status)
	}
}

func TestFindPendingByQuestionDeduplicates(t *testing.T) {
	store, _ := open(t)
	ctx := ctxFor(t, 60*time.Second)
	id, _, _ := store.Ask(ctx, "Deploy on Friday?", "", "")
	if _, _, err := store.Ask(ctx, "Something else", "", ""); err != nil {
		t.Fatal(err)
	}
	if found, ok := store.FindPendingByQuestion(ctx, "Deploy on Friday?"); !ok || found != id {
		t.Fatalf("found %q %v, want %s", found, ok, id)
	}
	if _, ok := store.FindPendingByQuestion(ctx, "Never asked"); ok {
		t.Error("found a question never asked")
	}
	if err := store.Respond(id, "no"); err != nil {
		t.Fatal(err)
	}
	if _, ok := store.FindPendingByQuestion(ctx, "Deploy on Friday?"); ok {
		t.Error("an answered question was still found pending")
	}
}

// TestStoreHelperProcess is the Go side that asks and then dies: run as a child process by
// TestRecoverPendingAcrossARestartOfTheGoProcess.
func TestStoreHelperProcess(t *testing.T) {
	if os.Getenv("CLARIFYSTORE_HELPER") != "1" {
		t.Skip("run as a child process only")
	}
	store := clarifystore.New(clarify.NewClient(os.Getenv("CLARIFY_URL"), os.Getenv("CLARIFY_TOKEN")), clarifystore.WithSession("recover"))
	ctx := context.Background()
	old, _, err := store.Ask(ctx, "Old question", "", "")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	fresh, _, err := store.Ask(ctx, "New question", "", "")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("ids %s %s\n", old, fresh)
	// The process ends without Close or Cleanup, as a crash would.
	os.Exit(0)
}

func TestRecoverPendingAcrossARestartOfTheGoProcess(t *testing.T) {
	s := clarifytest.Start(t)
	key := s.Key("admin", "go-store")
	cmd := exec.Command(os.Args[0], "-test.run=^TestStoreHelperProcess$")
	cmd.Env = append(os.Environ(), "CLARIFYSTORE_HELPER=1", "CLARIFY_URL="+s.URL, "CLARIFY_TOKEN="+key)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the asking process failed: %v: %s", err, out)
	}
	var old, fresh string
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "ids %s %s", &old, &fresh); err != nil {
		t.Fatalf("the asking process printed %q", out)
	}

	ctx := ctxFor(t, 60*time.Second)
	c := clarify.NewClient(s.URL, key)
	freshRecord, err := c.Get(ctx, fresh)
	if err != nil {
		t.Fatal(err)
	}
	// Now is just after the new question: the old one is more than a second older.
	clock := func() time.Time { return freshRecord.CreatedAt.Add(200 * time.Millisecond) }
	store := clarifystore.New(c, clarifystore.WithSession("recover"), clarifystore.WithClock(clock))
	defer store.Close()
	result, err := store.RecoverPending(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if result.Recovered != 1 || result.Expired != 1 || result.RecoveredIDs[0] != fresh || result.ExpiredIDs[0] != old {
		t.Fatalf("RecoverPending: %+v, want %s recovered and %s expired", result, fresh, old)
	}
	if r, _ := c.Get(ctx, old); r.Status != clarify.StatusCancelled {
		t.Errorf("the old question is %s on the server", r.Status)
	}
	if found, ok := store.FindPendingByQuestion(ctx, "New question"); !ok || found != fresh {
		t.Errorf("the new question is not pending: %q %v", found, ok)
	}
	if err := store.Respond(fresh, "recovered"); err != nil {
		t.Fatal(err)
	}
	if got, err := store.WaitForResponse(ctx, fresh, nil); err != nil || got.Answer != "recovered" {
		t.Fatalf("waiting on the recovered question: %+v %v", got, err)
	}
}

func TestAHundredGoroutinesAskAndWaitAtOnce(t *testing.T) {
	store, s := open(t)
	// Half the answers come through another client, as from the inbox: those arrive by
	// long-poll, the others through the store's channels.
	elsewhere := clarifystore.New(s.Client("responder", "alice"))
	defer elsewhere.Close()
	ctx := ctxFor(t, 120*time.Second)
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			question := fmt.Sprintf("Question %d?", i)
			id, ch, err := store.Ask(ctx, question, "", fmt.Sprintf("slack:U%d", i))
			if err != nil {
				errs <- err
				return
			}
			want := fmt.Sprintf("answer %d", i)
			go func() {
				responder := store
				if i%2 == 1 {
					responder = elsewhere
				}
				if err := responder.Respond(id, want); err != nil {
					errs <- fmt.Errorf("responding to %d: %w", i, err)
				}
			}()
			got, err := store.WaitForResponse(ctx, id, ch)
			if err != nil || got.Answer != want {
				errs <- fmt.Errorf("question %d: got %+v, %v", i, got, err)
			}
			store.Cleanup(id)
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, ok := store.FindPendingByQuestion(ctx, "Question 7?"); ok {
		t.Error("an answered question is still pending")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
