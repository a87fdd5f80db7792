// Package clarifytest runs a real `clarify serve` for the tests: the binary named by
// CLARIFY_BIN on a free port of 127.0.0.1 over a SQLite file in a temporary directory, keys made
// with `clarify keys create` on the same database, and a person who answers what is asked.
//
// Without CLARIFY_BIN the tests are skipped with the reason, or fail when
// CLARIFY_REQUIRE_SERVICES=1 (as CI sets it).
package clarifytest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clarify "github.com/clarify-hitl/clarify/sdks/go"
)

// Server is one `clarify serve` process; Kill and Start keep its port and database.
type Server struct {
	Bin  string
	DB   string
	Port int
	URL  string
	// Extra are arguments added to `clarify serve`.
	Extra []string

	t    testing.TB
	log  *os.File
	cmd  *exec.Cmd
	exit chan struct{}
}

// Binary is CLARIFY_BIN, or skips (fails under CLARIFY_REQUIRE_SERVICES=1) when it is not an
// executable.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("CLARIFY_BIN")
	if bin != "" {
		if info, err := os.Stat(bin); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return bin
		}
	}
	reason := fmt.Sprintf("CLARIFY_BIN (%q) must name a built clarify binary; sdks/go/scripts/test sets it", bin)
	if os.Getenv("CLARIFY_REQUIRE_SERVICES") == "1" {
		t.Fatal(reason)
	}
	t.Skip("skipping: " + reason)
	return ""
}

// FreePort is a port of 127.0.0.1 nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts a server with a database of its own; it is killed when the test ends.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	dir := t.TempDir()
	s := &Server{
		Bin:   Binary(t),
		DB:    "sqlite://" + filepath.Join(dir, "clarify.db"),
		Port:  FreePort(t),
		Extra: extra,
		t:     t,
	}
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", s.Port)
	log, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Fatalf("creating the server's log: %v", err)
	}
	s.log = log
	s.Launch()
	t.Cleanup(func() {
		s.Kill()
		log.Close()
	})
	return s
}

// Launch starts the process and waits until /healthz answers.
func (s *Server) Launch() {
	s.t.Helper()
	args := append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", s.Port), "--db", s.DB}, s.Extra...)
	cmd := exec.Command(s.Bin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "RUST_LOG=warn")
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting %s: %v", s.Bin, err)
	}
	s.cmd = cmd
	s.exit = make(chan struct{})
	go func(exit chan struct{}) { _ = cmd.Wait(); close(exit) }(s.exit)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exit:
			s.t.Fatalf("clarify serve exited: %s", s.Log())
		default:
		}
		resp, err := http.Get(s.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("clarify serve did not answer /healthz within 30 s: %s", s.Log())
}

// Kill ends the process at once (SIGKILL), as a crash would.
func (s *Server) Kill() { s.stop(syscall.SIGKILL) }

// Stop ends the process gracefully (SIGTERM).
func (s *Server) Stop() { s.stop(syscall.SIGTERM) }

func (s *Server) stop(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exit:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exit
	}
	s.cmd = nil
}

// Log is what the server wrote so far.
func (s *Server) Log() string {
	data, _ := os.ReadFile(s.log.Name())
	return string(data)
}

// Key creates an API key with `clarify keys create` on the server's database.
func (s *Server) Key(role, name string) string {
	s.t.Helper()
	cmd := exec.Command(s.Bin, "keys", "create", "--role", role, "--name", name, "--db", s.DB)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("clarify keys create --role %s --name %s: %v: %s", role, name, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// Client is a client of this server with a new key of the role and name.
func (s *Server) Client(role, name string, opts ...clarify.Option) *clarify.Client {
	return clarify.NewClient(s.URL, s.Key(role, name), opts...)
}

// Person answers the pending requests of one session from another goroutine, as the inbox
// would: decide returns the answer, or false to leave a request alone.
type Person struct {
	c       *clarify.Client
	session string
	decide  func(*clarify.Record) (clarify.Answer, bool)
	stop    chan struct{}
	done    chan struct{}

	mu       sync.Mutex
	answered []*clarify.Record
	err      error
}

// Answering starts a person answering in session; it stops when the test ends.
func Answering(t testing.TB, c *clarify.Client, session string, decide func(*clarify.Record) (clarify.Answer, bool)) *Person {
	p := &Person{c: c, session: session, decide: decide, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	t.Cleanup(func() {
		p.Stop()
		if err := p.Err(); err != nil {
			t.Errorf("the person answering failed: %v", err)
		}
	})
	return p
}

func (p *Person) run() {
	defer close(p.done)
	seen := map[string]bool{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-p.stop; cancel() }()
	for {
		pager := p.c.List(ctx, clarify.ListOptions{Status: clarify.StatusPending, Session: p.session})
		var pending []*clarify.Record
		for pager.Next() {
			pending = append(pending, pager.Record())
		}
		if err := pager.Err(); err != nil && ctx.Err() == nil {
			p.fail(err)
			return
		}
		for i := len(pending) - 1; i >= 0; i-- {
			r := pending[i]
			if seen[r.ID] {
				continue
			}
			answer, ok := p.decide(r)
			if !ok {
				continue
			}
			seen[r.ID] = true
			if _, err := p.c.Answer(ctx, r.ID, answer); err != nil {
				if ctx.Err() == nil {
					p.fail(fmt.Errorf("answering %s: %w", r.ID, err))
				}
				return
			}
			p.mu.Lock()
			p.answered = append(p.answered, r)
			p.mu.Unlock()
		}
		select {
		case <-p.stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (p *Person) fail(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

// Stop stops answering.
func (p *Person) Stop() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// Err is what made the person stop, if anything.
func (p *Person) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Answered is the requests answered so far, in order.
func (p *Person) Answered() []*clarify.Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*clarify.Record(nil), p.answered...)
}
