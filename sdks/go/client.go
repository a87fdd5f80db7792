// Package clarify is the Go client of clarify, the self-hosted human-in-the-loop server: an
// agent asks a person a question (or for an approval), waits for the answer without losing it,
// and goes on.
//
//	c := clarify.NewClient("http://127.0.0.1:7420", os.Getenv("CLARIFY_TOKEN"))
//	outcome, err := c.Ask(ctx, clarify.Request{Questions: []clarify.Question{{
//		Text: "Deploy to prod?", Kind: clarify.KindSingle,
//		Options: []clarify.Choice{{Label: "yes"}, {Label: "no"}},
//	}}})
//
// Every call takes a context. Calls are retried with backoff and jitter when no reply came, on
// 429 (after its Retry-After) and on 5xx, never on another 4xx. Ask and Wait long-poll and
// reconnect through server restarts until the outcome or the context's end; Create sends an
// idempotency key, so a create whose reply was lost is sent again without asking twice.
// Failures are *Error values (errors.As), carrying the API's status, code and message.
package clarify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Version is this client's version, sent in its User-Agent.
const Version = "0.1.0"

// The server's longest single long-poll.
const maxPoll = 60 * time.Second

// defaultTransport is net/http's, keeping more idle connections to the server: its default of
// two makes agents waiting in many goroutines open and close a connection a call.
var defaultTransport = func() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = 256
	return t
}()

// Client is a client of one clarify server; safe for concurrent use.
type Client struct {
	base       string
	token      string
	http       *http.Client
	userAgent  string
	retries    int
	minBackoff time.Duration
	maxBackoff time.Duration
	createFor  time.Duration
	timeout    time.Duration
	cancelDone bool
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends the calls through h (its Transport, proxies, TLS); its Timeout should be
// zero, since long-polls and event streams last long and each call has its own limit.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithUserAgent sets the User-Agent (default `clarify-go/<Version>`).
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithRetries sets how many times a failed call is tried again (default 3; 0 never). Ask and
// Wait keep reconnecting regardless, until their context ends.
func WithRetries(n int) Option { return func(c *Client) { c.retries = n } }

// WithBackoff sets the first and the longest pause between tries (default 200 ms doubling to
// 5 s); each pause is jittered between half and all of it.
func WithBackoff(first, max time.Duration) Option {
	return func(c *Client) { c.minBackoff, c.maxBackoff = first, max }
}

// WithCreateRetry sets how long Ask keeps sending a create again once the server was seen but
// no reply came (a restart, 502/503/504); default 2 minutes.
func WithCreateRetry(d time.Duration) Option { return func(c *Client) { c.createFor = d } }

// WithTimeout sets the time limit of a call other than a long-poll or an event stream (default
// 30 s).
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithCancelOnDone says whether Ask cancels its request on the server when its context ends
// before the outcome (default true: nobody would read the answer).
func WithCancelOnDone(cancel bool) Option { return func(c *Client) { c.cancelDone = cancel } }

// NewClient returns a client of the clarify server at baseURL (empty: CLARIFY_URL, else
// http://127.0.0.1:7420) with the API key token (empty: CLARIFY_TOKEN).
func NewClient(baseURL, token string, opts ...Option) *Client {
	if baseURL == "" {
		baseURL = os.Getenv("CLARIFY_URL")
	}
	if baseURL == "" {
		baseURL = "http://127.0.0.1:7420"
	}
	if token == "" {
		token = os.Getenv("CLARIFY_TOKEN")
	}
	c := &Client{
		base:       strings.TrimRight(baseURL, "/"),
		token:      token,
		http:       &http.Client{Transport: defaultTransport},
		userAgent:  "clarify-go/" + Version,
		retries:    3,
		minBackoff: 200 * time.Millisecond,
		maxBackoff: 5 * time.Second,
		createFor:  2 * time.Minute,
		timeout:    30 * time.Second,
		cancelDone: true,
	}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// BaseURL is the server's address, without a trailing slash.
func (c *Client) BaseURL() string { return c.base }

// call is one API call: how to send it and which failures may be sent again.
type call struct {
	method string
	path   string
	query  url.Values
	body   any
	// timeout bounds one try (a long-poll's is its wait and a margin).
	timeout time.Duration
	// idempotent calls are retried on any failure without a reply and on every 5xx; the others
	// (answer, cancel, a grant check, which counts a use) only when the server cannot have acted
	// on them: no connection made, 429, or 503.
	idempotent bool
	// retries overrides the client's number of retries when not negative.
	retries int
}

// do sends a call, trying again as the call allows, and decodes a 2xx body into out. It returns
// the status of the reply it decoded.
func (c *Client) do(ctx context.Context, k call, out any) (int, error) {
	retries := c.retries
	if k.retries >= 0 {
		retries = k.retries
	}
	backoff := c.minBackoff
	for attempt := 0; ; attempt++ {
		status, err := c.once(ctx, k, out)
		if err == nil {
			return status, nil
		}
		var e *Error
		if !errors.As(err, &e) || attempt >= retries || !retryable(e, k.idempotent) {
			return status, err
		}
		if err := c.pause(ctx, e, &backoff); err != nil {
			return status, err
		}
	}
}

// retryable says whether a failed call may be sent again.
func retryable(e *Error, idempotent bool) bool {
	if !e.Temporary() {
		return false
	}
	if idempotent {
		return true
	}
	return (e.Status == 0 && !e.Sent) || e.Status == 429 || e.Status == 503
}

// pause sleeps before the next try: the server's Retry-After when it gave one (at most a
// minute), else the backoff, jittered, which then doubles up to the longest.
func (c *Client) pause(ctx context.Context, e *Error, backoff *time.Duration) error {
	d := *backoff
	if e != nil && e.RetryAfter > 0 {
		d = e.RetryAfter
		if d > time.Minute {
			d = time.Minute
		}
	} else {
		// Jitter spreads the clients a restart disconnected at once over the pause.
		d = d/2 + time.Duration(rand.Int63n(int64(d/2)+1))
	}
	*backoff *= 2
	if *backoff > c.maxBackoff {
		*backoff = c.maxBackoff
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// once sends one try of a call.
func (c *Client) once(ctx context.Context, k call, out any) (int, error) {
	timeout := k.timeout
	if timeout == 0 {
		timeout = c.timeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := c.newRequest(tctx, k.method, k.path, k.query, k.body)
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, c.unreachable(ctx, tctx, err, false)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, c.unreachable(ctx, tctx, err, true)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, c.refusal(resp, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return resp.StatusCode, &Error{
				Status:  resp.StatusCode,
				Code:    CodeProtocol,
				Message: fmt.Sprintf("HTTP %d with a body that is not clarify's JSON (%v); is %s a clarify server?", resp.StatusCode, err, c.base),
				Sent:    true,
			}
		}
	}
	return resp.StatusCode, nil
}

func (c *Client) newRequest(ctx context.Context, method, path string, query url.Values, body any) (*http.Request, error) {
	target := c.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("clarify: encoding the body of %s %s: %w", method, path, err)
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, reader)
	if err != nil {
		return nil, fmt.Errorf("clarify: invalid server URL %q: %w", c.base, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// refusal turns a non-2xx reply into an *Error.
func (c *Client) refusal(resp *http.Response, body []byte) error {
	e := &Error{
		Status:  resp.StatusCode,
		Code:    "unknown",
		Message: fmt.Sprintf("HTTP %d from %s", resp.StatusCode, c.base),
		Sent:    true,
	}
	var parsed struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Field   string `json:"field"`
		} `json:"error"`
		Record *Record `json:"record"`
	}
	// A body that is not clarify's JSON (a proxy's page) leaves the status to speak.
	if json.Unmarshal(body, &parsed) == nil && parsed.Error != nil {
		e.Code, e.Message, e.Field, e.Record = parsed.Error.Code, parsed.Error.Message, parsed.Error.Field, parsed.Record
	}
	if resp.StatusCode == http.StatusUnauthorized {
		e.Message += "; give an API key (create one with `clarify keys create`)"
	}
	if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// unreachable describes a call that got no reply (connected: after the reply began); the end
// of the caller's own context ctx is returned as its error, the end of the try's tctx as a
// reply that did not come in time.
func (c *Client) unreachable(ctx, tctx context.Context, err error, connected bool) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	sent := connected || !notConnected(err)
	var msg string
	switch {
	case tctx.Err() != nil:
		msg = fmt.Sprintf("%s did not reply in time", c.base)
	case sent:
		msg = fmt.Sprintf("the connection to %s broke before the reply came (%v)", c.base, err)
	default:
		msg = fmt.Sprintf("nothing answers at %s (%v); is `clarify serve` running there?", c.base, err)
	}
	return &Error{Code: CodeUnreachable, Message: msg, Sent: sent, Err: err}
}

// notConnected reports whether err happened before a connection was made, so the server cannot
// have seen the call.
func notConnected(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}
