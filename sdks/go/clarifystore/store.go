// Package clarifystore is the Go clarify store's interface, backed by a clarify server: a Go
// agent written against that store's Store (Ask, Respond, WaitForResponse, Cleanup,
// FindPendingByQuestion, RecoverPending, Close) uses a *Store from New unchanged, and its
// questions reach people through clarify's inbox, chat channels, phones and links.
//
// The questions are open questions in one session of the server (WithSession, default
// `clarifystore`), so FindPendingByQuestion and RecoverPending see this store's requests and no
// one else's. What the server keeps is the truth: a process that restarts finds its pending
// questions again with RecoverPending and waits on them as before.
package clarifystore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clarify "github.com/clarify-hitl/clarify/sdks/go"
)

// Response is the answer to a question: the typed text of an open question, the chosen label
// of a choice, the decision of an approval.
type Response struct {
	Answer string `json:"answer"`
}

// RecoverResult is what RecoverPending did with this store's pending questions.
type RecoverResult struct {
	// Recovered counts the pending questions younger than maxAge, left waiting.
	Recovered int
	// Expired counts those older than maxAge, cancelled on the server.
	Expired int
	// RecoveredIDs and ExpiredIDs are their request ids, oldest first.
	RecoveredIDs []string
	ExpiredIDs   []string
}

// Errors the store returns; compare with errors.Is. The server's own refusal, when there is one,
// is in the message.
var (
	// ErrNotFound: no request with that id in this store's tenant.
	ErrNotFound = errors.New("clarifystore: no such question")
	// ErrAlreadyResponded: the question was answered (or otherwise resolved) before.
	ErrAlreadyResponded = errors.New("clarifystore: the question was already responded to")
	// ErrNotAnswered: the question ended without an answer: skipped, expired or cancelled.
	ErrNotAnswered = errors.New("clarifystore: the question ended without an answer")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("clarifystore: the store is closed")
)

// Store is the Go clarify store's interface over a clarify server; safe for concurrent use.
type Store struct {
	c         *clarify.Client
	responder *clarify.Client
	session   string
	agent     string
	timeout   *int64
	now       func() time.Time
	callLimit time.Duration

	mu      sync.Mutex
	closed  bool
	waiters map[string]*waiter
	ctx     context.Context
	cancel  context.CancelFunc
}

// waiter is one question's in-process channel and the waits on it, which Cleanup and Close end.
type waiter struct {
	ch     chan Response
	cancel context.CancelFunc
	ctx    context.Context
}

// Option configures a Store.
type Option func(*Store)

// WithSession puts the store's questions in session (default `clarifystore`): two stores with
// the same session share their pending questions.
func WithSession(session string) Option { return func(s *Store) { s.session = session } }

// WithAgent names the agent on each request.
func WithAgent(agent string) Option { return func(s *Store) { s.agent = agent } }

// WithResponder answers Respond's calls with this client (a responder or admin key) instead of
// the store's own.
func WithResponder(c *clarify.Client) Option { return func(s *Store) { s.responder = c } }

// WithQuestionTimeout sets how long a person has for each question (default: the server's, an
// hour; 0 never expires).
func WithQuestionTimeout(d time.Duration) Option {
	return func(s *Store) { n := int64(d / time.Second); s.timeout = &n }
}

// WithClock sets the clock RecoverPending measures ages with (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithCallTimeout bounds Respond and Cleanup's calls, which take no context (default 30 s).
func WithCallTimeout(d time.Duration) Option { return func(s *Store) { s.callLimit = d } }

// New returns a Store asking through c (an agent or admin key).
func New(c *clarify.Client, opts ...Option) *Store {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Store{
		c: c, responder: c, session: "clarifystore", now: time.Now, callLimit: 30 * time.Second,
		waiters: map[string]*waiter{}, ctx: ctx, cancel: cancel,
	}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// Ask creates an open question with qContext as the request's context and returns its id and a
// buffered channel that receives its Response when it is answered through this store.
//
// senderContext (such as `slack:U1234:C5678`, the person or channel the question came from) is
// kept on the request as the tag `sender:<senderContext>`, and its platform as
// `sender:<platform>`, so a `[[routes]]` entry with that tag announces it on that platform's
// channel.
func (s *Store) Ask(ctx context.Context, question, qContext, senderContext string) (string, <-chan Response, error) {
	if s.isClosed() {
		return "", nil, ErrClosed
	}
	req := clarify.Request{
		Questions:      []clarify.Question{{Text: question, Kind: clarify.KindOpen}},
		Session:        s.session,
		Agent:          s.agent,
		TimeoutSeconds: s.timeout,
		Tags:           senderTags(senderContext),
	}
	if qContext != "" {
		req.Context = qContext
	}
	record, err := s.c.Create(ctx, req)
	if err != nil {
		return "", nil, fmt.Errorf("clarifystore: asking %q: %w", question, err)
	}
	w, err := s.register(record.ID)
	if err != nil {
		return "", nil, err
	}
	return record.ID, w.ch, nil
}

// senderTags are the tags that keep senderContext on a request (a tag holds 64 characters).
func senderTags(senderContext string) []string {
	senderContext = strings.TrimSpace(senderContext)
	if senderContext == "" {
		return nil
	}
	tags := []string{cut("sender:" + senderContext)}
	if platform, _, found := strings.Cut(senderContext, ":"); found && platform != "" {
		if t := cut("sender:" + platform); t != tags[0] {
			tags = append(tags, t)
		}
	}
	return tags
}

func cut(tag string) string {
	if r := []rune(tag); len(r) > 64 {
		return string(r[:64])
	}
	return tag
}

// SenderContext is the senderContext Ask kept on a record, if any.
func SenderContext(r *clarify.Record) string {
	best := ""
	for _, t := range r.Tags {
		if v := strings.TrimPrefix(t, "sender:"); v != t && len(v) > len(best) {
			best = v
		}
	}
	return best
}

// register gives id an in-process channel, or the one it has.
func (s *Store) register(id string) (*waiter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if w, ok := s.waiters[id]; ok {
		return w, nil
	}
	ctx, cancel := context.WithCancel(s.ctx)
	w := &waiter{ch: make(chan Response, 1), cancel: cancel, ctx: ctx}
	s.waiters[id] = w
	return w, nil
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Respond answers the question id with answer through the API: the text of an open question,
// the label (or id) of an option of a choice (other text where the question allows it),
// approve or deny for an approval. It returns ErrNotFound for an unknown id and
// ErrAlreadyResponded for a question no longer pending; on success the store's waiters on id
// get the Response at once.
func (s *Store) Respond(id, answer string) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.callLimit)
	defer cancel()
	record, err := s.responder.Get(ctx, id)
	if err != nil {
		return classify(id, err)
	}
	if record.Resolved() {
		return fmt.Errorf("%w: %s is %s", ErrAlreadyResponded, id, record.Status)
	}
	result, err := s.responder.Answer(ctx, id, answerFor(record, answer))
	if err != nil {
		return classify(id, err)
	}
	if result.Outcome != nil {
		s.deliver(id, Response{Answer: result.Outcome.Text()})
	}
	return nil
}

// answerFor is the API answer that gives record's questions the text answer.
func answerFor(record *clarify.Record, answer string) clarify.Answer {
	answers := map[string]clarify.QuestionAnswer{}
	for _, q := range record.Questions {
		a := clarify.QuestionAnswer{}
		switch q.Kind {
		case clarify.KindSingle, clarify.KindMulti:
			id := ""
			for _, o := range q.Options {
				if strings.EqualFold(o.Label, answer) || o.ID == answer {
					id = o.ID
				}
			}
			switch {
			case id == "":
				a.Other = answer
			case q.Kind == clarify.KindSingle:
				a.Option = id
			default:
				a.Options = []string{id}
			}
		case clarify.KindApproval:
			a.Decision = strings.ToLower(strings.TrimSpace(answer))
			if a.Decision != clarify.DecisionApprove {
				a.Decision, a.Reason = clarify.DecisionDeny, answer
			}
		default:
			a.Text = answer
		}
		answers[q.ID] = a
	}
	return clarify.Answer{Answers: answers}
}

// classify turns the server's refusals into the store's errors.
func classify(id string, err error) error {
	var e *clarify.Error
	if errors.As(err, &e) {
		switch {
		case e.Status == 404:
			return fmt.Errorf("%w: %s (%s)", ErrNotFound, id, e.Message)
		case e.Status == 409:
			return fmt.Errorf("%w: %s (%s)", ErrAlreadyResponded, id, e.Message)
		}
	}
	return fmt.Errorf("clarifystore: %s: %w", id, err)
}

// deliver hands a response to id's channel, if the store has one and it is not full.
func (s *Store) deliver(id string, r Response) {
	s.mu.Lock()
	w, ok := s.waiters[id]
	s.mu.Unlock()
	if !ok {
		return
	}
	select {
	case w.ch <- r:
	default:
	}
}

// WaitForResponse waits for the answer to id: it long-polls clarify (no polling interval) and
// also takes a Response arriving on ch (from Ask or RecoverPending; nil is allowed). It returns
// ctx's error when ctx ends first (the question stays pending), ErrNotAnswered when the
// question was skipped, expired or cancelled, and ErrClosed after Cleanup(id) or Close.
func (s *Store) WaitForResponse(ctx context.Context, id string, ch <-chan Response) (Response, error) {
	w, err := s.register(id)
	if err != nil {
		return Response{}, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type polled struct {
		r   Response
		err error
	}
	result := make(chan polled, 1)
	go func() {
		record, err := s.c.Wait(wctx, id, 0)
		if err != nil {
			result <- polled{err: err}
			return
		}
		if record.Status != clarify.StatusAnswered || record.Outcome == nil {
			note := ""
			if record.Outcome != nil {
				note = ": " + record.Outcome.Note
			}
			result <- polled{err: fmt.Errorf("%w: %s is %s%s", ErrNotAnswered, id, record.Status, note)}
			return
		}
		result <- polled{r: Response{Answer: record.Outcome.Text()}}
	}()
	select {
	case r := <-ch:
		return r, nil
	case r := <-w.ch:
		return r, nil
	case p := <-result:
		if p.err != nil {
			if ctx.Err() != nil {
				return Response{}, ctx.Err()
			}
			if w.ctx.Err() != nil {
				return Response{}, ErrClosed
			}
			return Response{}, classify(id, p.err)
		}
		return p.r, nil
	case <-ctx.Done():
		return Response{}, ctx.Err()
	case <-w.ctx.Done():
		return Response{}, ErrClosed
	}
}

// Cleanup forgets id's channel and ends the waits on it; the question itself stays as it is on
// the server.
func (s *Store) Cleanup(id string) {
	s.mu.Lock()
	w, ok := s.waiters[id]
	delete(s.waiters, id)
	s.mu.Unlock()
	if ok {
		w.cancel()
	}
}

// FindPendingByQuestion returns the id of a pending question of this store with the same text
// (the newest), so an agent asking again after a restart waits on the question it asked before.
func (s *Store) FindPendingByQuestion(ctx context.Context, question string) (string, bool) {
	want := strings.TrimSpace(question)
	p := s.c.List(ctx, clarify.ListOptions{Status: clarify.StatusPending, Session: s.session, Limit: 200})
	for p.Next() {
		r := p.Record()
		if len(r.Questions) > 0 && strings.TrimSpace(r.Questions[0].Text) == want {
			return r.ID, true
		}
	}
	return "", false
}

// RecoverPending goes through this store's pending questions after a start: those created more
// than maxAge ago are cancelled on the server (expired), the others are kept waiting, each with
// a channel again, so Respond in this process reaches WaitForResponse as before.
func (s *Store) RecoverPending(ctx context.Context, maxAge time.Duration) (RecoverResult, error) {
	var pending []*clarify.Record
	p := s.c.List(ctx, clarify.ListOptions{Status: clarify.StatusPending, Session: s.session, Limit: 200})
	for p.Next() {
		pending = append(pending, p.Record())
	}
	if err := p.Err(); err != nil {
		return RecoverResult{}, fmt.Errorf("clarifystore: listing the pending questions: %w", err)
	}
	var result RecoverResult
	now := s.now()
	for i := len(pending) - 1; i >= 0; i-- {
		r := pending[i]
		if now.Sub(r.CreatedAt) > maxAge {
			if _, err := s.c.Cancel(ctx, r.ID); err != nil {
				var e *clarify.Error
				if errors.As(err, &e) && e.Status == 409 {
					continue // resolved meanwhile: neither expired by us nor pending
				}
				return result, fmt.Errorf("clarifystore: expiring %s: %w", r.ID, err)
			}
			result.Expired++
			result.ExpiredIDs = append(result.ExpiredIDs, r.ID)
			continue
		}
		if _, err := s.register(r.ID); err != nil {
			return result, err
		}
		result.Recovered++
		result.RecoveredIDs = append(result.RecoveredIDs, r.ID)
	}
	return result, nil
}

// Close ends every wait and refuses further questions; the questions stay on the server.
func (s *Store) Close() {
	s.mu.Lock()
	s.closed = true
	s.waiters = map[string]*waiter{}
	s.mu.Unlock()
	s.cancel()
}
