// The event stream (`GET /v1/events`, Server-Sent Events) as an iterator that resumes with
// Last-Event-ID after every disconnect, so no event is lost or repeated.
//
// The parser is hand-written because the standard library has no Server-Sent Events client;
// it follows the WHATWG rules clarify's stream uses (`id`, `event`, `data` fields, comments,
// a blank line ending an event).

package clarify

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
)

// A stream silent this long is dead: the server sends a keep-alive every 15 s.
const streamIdle = 45 * time.Second

// Event is one event of the stream: Type is `request.created`, `request.answered`,
// `request.skipped`, `request.expired`, `request.cancelled`, `request.voted`, ...; Record is
// the request just after it.
type Event struct {
	// ID is the event's id, monotonic; pass it to Events to resume after it.
	ID     string
	Type   string
	Record *Record
	// Data is the event's data as sent.
	Data json.RawMessage
}

// EventStream iterates over events as they come; not for concurrent use, except Close.
//
//	s := c.Events(ctx, "")
//	defer s.Close()
//	for s.Next() {
//		e := s.Event()
//	}
//	if err := s.Err(); err != nil { ... }
type EventStream struct {
	events  chan Event
	done    chan struct{}
	cancel  context.CancelFunc
	current Event
	err     error
}

// Events opens the tenant's event stream. With after empty it starts with the events written
// from now on; with an event id it first replays every later one. When the connection ends or
// breaks it reconnects (with backoff) sending the last id seen as Last-Event-ID, until ctx ends
// or Close is called; a refusal other than 429 or 503 ends it with that error.
func (c *Client) Events(ctx context.Context, after string) *EventStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &EventStream{events: make(chan Event), done: make(chan struct{}), cancel: cancel}
	go s.run(ctx, c, after)
	return s
}

// Next waits for the next event; false once the stream has ended (see Err).
func (s *EventStream) Next() bool {
	e, ok := <-s.events
	if !ok {
		return false
	}
	s.current = e
	return true
}

// Event is the event Next received.
func (s *EventStream) Event() Event { return s.current }

// Err is why the stream ended: ctx's error, or a refusal; nil after Close.
func (s *EventStream) Err() error {
	<-s.done
	return s.err
}

// Close ends the stream.
func (s *EventStream) Close() {
	s.cancel()
	<-s.done
	if errors.Is(s.err, context.Canceled) {
		s.err = nil
	}
}

func (s *EventStream) run(ctx context.Context, c *Client, last string) {
	defer close(s.done)
	defer close(s.events)
	backoff := c.minBackoff
	for {
		delivered, err := s.connect(ctx, c, &last)
		if ctx.Err() != nil {
			s.err = ctx.Err()
			return
		}
		if delivered {
			backoff = c.minBackoff
		}
		var e *Error
		if errors.As(err, &e) && !e.Temporary() {
			s.err = err
			return
		}
		if err := c.pause(ctx, e, &backoff); err != nil {
			s.err = err
			return
		}
	}
}

// connect reads one connection of the stream until it ends, delivering its events and keeping
// last up to date; delivered says whether any event came.
func (s *EventStream) connect(ctx context.Context, c *Client, last *string) (delivered bool, err error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := c.newRequest(cctx, http.MethodGet, "/v1/events", nil, nil)
	if err != nil {
		return false, &Error{Code: CodeProtocol, Message: err.Error()}
	}
	req.Header.Set("Accept", "text/event-stream")
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false, c.unreachable(ctx, cctx, err, false)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body := make([]byte, 64<<10)
		n, _ := resp.Body.Read(body)
		return false, c.refusal(resp, body[:n])
	}
	watchdog := time.AfterFunc(streamIdle, cancel)
	defer watchdog.Stop()

	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 64<<10), 16<<20)
	var kind, id string
	var data []string
	for lines.Scan() {
		watchdog.Reset(streamIdle)
		line := strings.TrimSuffix(lines.Text(), "\r")
		if line == "" {
			if id != "" {
				*last = id
			}
			if len(data) > 0 && kind != "" {
				e := Event{ID: *last, Type: kind, Data: json.RawMessage(strings.Join(data, "\n"))}
				var record Record
				if json.Unmarshal(e.Data, &record) == nil && record.ID != "" {
					e.Record = &record
				}
				select {
				case s.events <- e:
					delivered = true
				case <-ctx.Done():
					return delivered, ctx.Err()
				}
			}
			kind, id, data = "", "", nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			kind = value
		case "data":
			data = append(data, value)
		case "id":
			if !strings.ContainsRune(value, 0) {
				id = value
			}
		}
	}
	err = lines.Err()
	if err == nil {
		err = errors.New("the server ended the stream")
	}
	return delivered, c.unreachable(ctx, cctx, err, true)
}
