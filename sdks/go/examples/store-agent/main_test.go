// The example agent against a real `clarify serve`: its question is answered as from the
// inbox, and asked again after a restart it waits on the same question.

package main

import (
	"context"
	"testing"
	"time"

	clarify "github.com/clarify-hitl/clarify/sdks/go"
	"github.com/clarify-hitl/clarify/sdks/go/clarifystore"
	"github.com/clarify-hitl/clarify/sdks/go/internal/clarifytest"
)

func TestTheAgentGetsThePersonsAnswer(t *testing.T) {
	s := clarifytest.Start(t)
	agent := s.Client("agent", "store-agent")
	person := s.Client("responder", "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// A first run asks and is stopped before the answer; the question stays pending.
	first := clarifystore.New(agent, clarifystore.WithAgent("store-agent"))
	short, stop := context.WithTimeout(ctx, 500*time.Millisecond)
	defer stop()
	if _, err := ask(short, first, "Ship it today?"); err == nil {
		t.Fatal("the first run got an answer nobody gave")
	}
	first.Close()

	// The second run finds that question and waits on it; the person answers it once the run
	// is waiting.
	second := clarifystore.New(agent, clarifystore.WithAgent("store-agent"))
	defer second.Close()
	type result struct {
		answer string
		err    error
	}
	done := make(chan result, 1)
	go func() { a, err := ask(ctx, second, "Ship it today?"); done <- result{a, err} }()
	time.Sleep(time.Second)
	clarifytest.Answering(t, person, "clarifystore", func(r *clarify.Record) (clarify.Answer, bool) {
		return clarify.AnswerOne(clarify.QuestionAnswer{Text: "yes, after lunch"}), true
	})
	got := <-done
	if got.err != nil || got.answer != "yes, after lunch" {
		t.Fatalf("the agent got %q, %v", got.answer, got.err)
	}
	var asked []string
	p := agent.List(ctx, clarify.ListOptions{Session: "clarifystore"})
	for p.Next() {
		asked = append(asked, p.Record().ID)
	}
	if len(asked) != 1 {
		t.Fatalf("the question was asked %d times (%v), want once", len(asked), asked)
	}
}
