// Command store-agent is a Go agent written against the Go clarify store's interface, run
// over clarify: it asks one question (or finds the one it asked before a restart), waits for a
// person to answer it in the inbox, a chat or a phone, and prints the answer.
//
//	CLARIFY_URL=http://127.0.0.1:7420 CLARIFY_TOKEN=<agent key> go run ./examples/store-agent "Ship it?"
//
// Only main knows the store is clarify's; the agent code below sees the interface alone.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	clarify "github.com/clarify-hitl/clarify/sdks/go"
	"github.com/clarify-hitl/clarify/sdks/go/clarifystore"
)

// Store is the Go clarify store's interface, as the agent was written against it.
type Store interface {
	Ask(ctx context.Context, question, qContext, senderContext string) (string, <-chan clarifystore.Response, error)
	Respond(id, answer string) error
	WaitForResponse(ctx context.Context, id string, ch <-chan clarifystore.Response) (clarifystore.Response, error)
	Cleanup(id string)
	FindPendingByQuestion(ctx context.Context, question string) (string, bool)
	RecoverPending(ctx context.Context, maxAge time.Duration) (clarifystore.RecoverResult, error)
	Close()
}

func main() {
	question := "Which release should go out today?"
	if len(os.Args) > 1 {
		question = strings.Join(os.Args[1:], " ")
	}
	// CLARIFY_URL (default http://127.0.0.1:7420) and CLARIFY_TOKEN.
	var store Store = clarifystore.New(
		clarify.NewClient("", ""),
		clarifystore.WithAgent("store-agent"),
	)
	defer store.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	answer, err := ask(ctx, store, question)
	if err != nil {
		fmt.Fprintln(os.Stderr, "store-agent:", err)
		os.Exit(1)
	}
	fmt.Println(answer)
}

// ask is the agent's part: it knows only the Store interface.
func ask(ctx context.Context, store Store, question string) (string, error) {
	if _, err := store.RecoverPending(ctx, 24*time.Hour); err != nil {
		return "", err
	}
	var ch <-chan clarifystore.Response
	id, found := store.FindPendingByQuestion(ctx, question)
	if !found {
		var err error
		id, ch, err = store.Ask(ctx, question, "asked by the store-agent example", "cli:"+os.Getenv("USER"))
		if err != nil {
			return "", err
		}
	}
	defer store.Cleanup(id)
	fmt.Fprintf(os.Stderr, "store-agent: waiting for an answer to %s in the inbox (Ctrl-C leaves it pending)\n", id)
	r, err := store.WaitForResponse(ctx, id, ch)
	if errors.Is(err, context.Canceled) {
		return "", fmt.Errorf("stopped waiting; run again to wait on %s", id)
	}
	return r.Answer, err
}
