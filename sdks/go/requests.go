// The calls on requests: Ask (create and wait), Create, Get, Wait, Cancel, List and its Pager,
// Answer, and the grant check and webhook secret beside them.

package clarify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Ask creates the request and waits for its outcome: answered, skipped, expired or cancelled.
//
// The create carries an idempotency key (a fresh one unless req has one), so when its reply is
// lost it is sent again, for up to WithCreateRetry, and the person is asked once. The wait
// long-polls and reconnects, with backoff, through restarts of the server and across the
// instances behind one address, until the outcome or ctx's end. When ctx ends first the request
// is cancelled on the server (unless WithCancelOnDone(false)) and ctx's error returned.
func (c *Client) Ask(ctx context.Context, req Request) (*Outcome, error) {
	record, err := c.create(ctx, req, true)
	if err != nil {
		return nil, err
	}
	if !record.Resolved() {
		resolved, err := c.Wait(ctx, record.ID, 0)
		if err != nil {
			if ctx.Err() != nil && c.cancelDone {
				// ctx is over: the cancel gets a few seconds of its own.
				cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, _ = c.Cancel(cctx, record.ID)
				cancel()
			}
			return nil, err
		}
		record = resolved
	}
	return outcomeOf(record)
}

// Create creates a request and returns its record at once (the original record, whatever its
// status, when its idempotency key was used before). A fresh idempotency key is sent unless req
// has one, so the client's retries of a create whose reply was lost ask once.
func (c *Client) Create(ctx context.Context, req Request) (*Record, error) {
	return c.create(ctx, req, false)
}

func (c *Client) create(ctx context.Context, req Request, patient bool) (*Record, error) {
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = NewIdempotencyKey()
	}
	k := call{method: http.MethodPost, path: "/v1/requests", body: req, idempotent: true, retries: -1}
	var record Record
	if !patient {
		if _, err := c.do(ctx, k, &record); err != nil {
			return nil, err
		}
		return &record, nil
	}
	// Ask's create: sent again while the server was seen but did not reply, for up to
	// createFor; a server never seen is an error once the client's retries are spent.
	deadline := time.Now().Add(c.createFor)
	backoff := c.minBackoff
	seen := false
	k.retries = 0
	for attempt := 0; ; attempt++ {
		_, err := c.do(ctx, k, &record)
		if err == nil {
			return &record, nil
		}
		var e *Error
		if !errors.As(err, &e) || !retryable(e, true) {
			return nil, err
		}
		seen = seen || e.Sent
		if (!seen && attempt >= c.retries) || time.Now().Add(backoff).After(deadline) {
			return nil, err
		}
		if err := c.pause(ctx, e, &backoff); err != nil {
			return nil, err
		}
	}
}

// NewIdempotencyKey returns a fresh idempotency key: 128 random bits.
func NewIdempotencyKey() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on the systems Go supports; a clock-based key is still unique
		// enough to tell one create from another.
		return fmt.Sprintf("clarify-%d", time.Now().UnixNano())
	}
	return "clarify-" + hex.EncodeToString(b[:])
}

// Get returns the request's record, with its outcome once resolved.
func (c *Client) Get(ctx context.Context, id string) (*Record, error) {
	var record Record
	_, err := c.do(ctx, call{method: http.MethodGet, path: requestPath(id, ""), idempotent: true, retries: -1}, &record)
	if err != nil {
		return nil, err
	}
	return &record, nil
}

// Wait waits until the request is resolved and returns its record. With timeout above zero it
// returns the record as it is then, possibly still pending, once timeout has passed; with zero
// it waits until the request resolves or ctx ends (the server expires requests at their own
// time limit). It long-polls, 60 s a call, and reconnects with backoff while the server is
// unreachable or restarting.
func (c *Client) Wait(ctx context.Context, id string, timeout time.Duration) (*Record, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	backoff := c.minBackoff
	var last *Record
	for {
		poll := maxPoll
		if !deadline.IsZero() {
			poll = time.Until(deadline)
			if poll < 0 {
				poll = 0
			}
			if poll > maxPoll {
				poll = maxPoll
			}
		}
		seconds := int64((poll + time.Second - 1) / time.Second)
		var record Record
		_, err := c.do(ctx, call{
			method:  http.MethodGet,
			path:    requestPath(id, "wait"),
			query:   url.Values{"timeout_seconds": {strconv.FormatInt(seconds, 10)}},
			timeout: time.Duration(seconds)*time.Second + 15*time.Second,
			retries: 0,
		}, &record)
		if err == nil {
			last = &record
			backoff = c.minBackoff
			if record.Resolved() || (!deadline.IsZero() && !time.Now().Before(deadline)) {
				return last, nil
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || !e.Temporary() {
			return nil, err
		}
		if !deadline.IsZero() && time.Now().Add(backoff).After(deadline) {
			if last != nil {
				return last, nil
			}
			return nil, err
		}
		if err := c.pause(ctx, e, &backoff); err != nil {
			return nil, err
		}
	}
}

// Cancel cancels a pending request and returns its record; `409 already_resolved` when it was
// no longer pending.
func (c *Client) Cancel(ctx context.Context, id string) (*Record, error) {
	var record Record
	_, err := c.do(ctx, call{method: http.MethodPost, path: requestPath(id, "cancel"), body: struct{}{}, retries: -1}, &record)
	if err != nil {
		return nil, err
	}
	return &record, nil
}

// Extend moves a pending request's deadline `by` later (sent in whole seconds, rounded up), as
// someone who may answer it, up to the server's `[decisions] max_extension`, and returns the
// record with its new ExpiresAt. `400 extension_too_long` or `invalid_extension` when it may not
// move that far, `409 already_resolved` when it is no longer pending.
func (c *Client) Extend(ctx context.Context, id string, by time.Duration) (*Record, error) {
	seconds := int64(by / time.Second)
	if by%time.Second > 0 {
		seconds++
	}
	body := struct {
		By int64 `json:"by"`
	}{By: seconds}
	var record Record
	_, err := c.do(ctx, call{method: http.MethodPost, path: requestPath(id, "extend"), body: body, retries: -1}, &record)
	if err != nil {
		return nil, err
	}
	return &record, nil
}

// Answer answers (or, with Skip, skips) a request, for a responder or admin key. An answer that
// does not fit is `422` and leaves the request pending; a resolved request is
// `409 already_resolved` with the first resolution in the error's Record. On a quorum request
// each answer is the key's vote: the result carries the pending Record while more approvals
// are needed, and the Outcome once the vote decides it.
func (c *Client) Answer(ctx context.Context, id string, a Answer) (*AnswerResult, error) {
	var raw struct {
		RequestID string `json:"request_id"`
	}
	var body json.RawMessage
	status, err := c.do(ctx, call{method: http.MethodPost, path: requestPath(id, "answer"), body: a, retries: -1}, &body)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, c.protocol(status, err)
	}
	if status == http.StatusAccepted || raw.RequestID == "" {
		var record Record
		if err := json.Unmarshal(body, &record); err != nil {
			return nil, c.protocol(status, err)
		}
		return &AnswerResult{Record: &record}, nil
	}
	var outcome Outcome
	if err := json.Unmarshal(body, &outcome); err != nil {
		return nil, c.protocol(status, err)
	}
	return &AnswerResult{Outcome: &outcome}, nil
}

// CheckGrant reports whether a person's grant lets the call action (in session; empty: only
// `always` grants count) run without asking. A grant found counts a use.
func (c *Client) CheckGrant(ctx context.Context, action Action, session string) (*GrantCheck, error) {
	body := struct {
		Action  Action `json:"action"`
		Session string `json:"session,omitempty"`
	}{action, session}
	var check GrantCheck
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/grants/check", body: body, retries: -1}, &check); err != nil {
		return nil, err
	}
	return &check, nil
}

// WebhookSecret returns the secret the tenant's webhooks are signed with, for VerifyWebhook.
func (c *Client) WebhookSecret(ctx context.Context) (string, error) {
	var body struct {
		Secret string `json:"secret"`
	}
	status, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/webhook-secret", idempotent: true, retries: -1}, &body)
	if err != nil {
		return "", err
	}
	if body.Secret == "" {
		return "", c.protocol(status, errors.New("no `secret` in the reply"))
	}
	return body.Secret, nil
}

// ListOptions filters List and ListPage; empty fields do not filter.
type ListOptions struct {
	Status  string
	Session string
	Agent   string
	Tag     string
	// Limit is the page size (1 to 500; 0: the server's 50).
	Limit int
	// Cursor starts after a page: its NextCursor.
	Cursor string
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	for name, value := range map[string]string{
		"status": o.Status, "session": o.Session, "agent": o.Agent, "tag": o.Tag, "cursor": o.Cursor,
	} {
		if value != "" {
			q.Set(name, value)
		}
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// ListPage returns one page of requests, newest first, with the cursor of the next.
func (c *Client) ListPage(ctx context.Context, opts ListOptions) (*Page, error) {
	var page Page
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/requests", query: opts.query(), idempotent: true, retries: -1}, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// List returns a Pager over every matching request, newest first, fetching page after page as
// the iteration goes:
//
//	p := c.List(ctx, clarify.ListOptions{Status: clarify.StatusPending})
//	for p.Next() {
//		r := p.Record()
//	}
//	if err := p.Err(); err != nil { ... }
func (c *Client) List(ctx context.Context, opts ListOptions) *Pager {
	return &Pager{c: c, ctx: ctx, opts: opts}
}

// Pager iterates over the requests of a List; not for concurrent use.
type Pager struct {
	c       *Client
	ctx     context.Context
	opts    ListOptions
	page    []Record
	current Record
	done    bool
	err     error
}

// Next advances to the next request, fetching the next page when needed; false at the end or
// on an error (see Err).
func (p *Pager) Next() bool {
	for len(p.page) == 0 {
		if p.done || p.err != nil {
			return false
		}
		page, err := p.c.ListPage(p.ctx, p.opts)
		if err != nil {
			p.err = err
			return false
		}
		p.page = page.Requests
		p.opts.Cursor = page.NextCursor
		p.done = page.NextCursor == "" || len(page.Requests) == 0
	}
	p.current, p.page = p.page[0], p.page[1:]
	return true
}

// Record is the request Next advanced to.
func (p *Pager) Record() *Record { r := p.current; return &r }

// Err is the error that ended the iteration, if any.
func (p *Pager) Err() error { return p.err }

// requestPath is `/v1/requests/{id}` (and `/{action}`), the id escaped as one path segment.
func requestPath(id, action string) string {
	path := "/v1/requests/" + url.PathEscape(id)
	if action != "" {
		path += "/" + action
	}
	return path
}

func outcomeOf(r *Record) (*Outcome, error) {
	if r.Outcome == nil {
		return nil, &Error{Status: http.StatusOK, Code: CodeProtocol, Message: fmt.Sprintf("request %s is %s but came without an outcome", r.ID, r.Status), Sent: true}
	}
	return r.Outcome, nil
}

func (c *Client) protocol(status int, err error) error {
	return &Error{Status: status, Code: CodeProtocol, Message: fmt.Sprintf("HTTP %d with a body that is not what clarify sends (%v); is %s a clarify server?", status, err, c.base), Sent: true}
}
