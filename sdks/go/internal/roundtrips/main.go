// Command roundtrips measures round trips per second of Ask with 32 goroutines against one
// `clarify serve`, beside a bare net/http loop making the same two calls (create, then the
// long-poll until resolved) and, when they are set up, the Python and TypeScript clients' ask
// under the same load. BENCHMARKS.md gives its figures.
//
//	CLARIFY_BIN=target/debug/clarify go run ./internal/roundtrips [-seconds 8] [-rounds 2] [-python VENV_PYTHON] [-typescript SDK_DIR]
//
// Each round trip is one question asked and answered: a person is simulated by answerers that
// take each `request.created` of the stream and answer it at once, the same for every client.
// The modes alternate, round after round, on one server, so compare the figures of one run.
// For the Go modes it also gives this process's CPU time per round trip (the loop's and the
// person's, who does the same work in every mode), which the machine's load does not change.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clarify "github.com/clarify-hitl/clarify/sdks/go"
)

const workers = 32

func main() {
	seconds := flag.Int("seconds", 8, "seconds measured per mode and round (after a second of warm-up)")
	rounds := flag.Int("rounds", 2, "rounds of every mode")
	python := flag.String("python", "", "a Python with clarify_hitl installed, to measure its Client too")
	typescript := flag.String("typescript", "", "sdks/typescript with dist/ built, to measure its Client too")
	flag.Parse()
	if err := run(time.Duration(*seconds)*time.Second, *rounds, *python, *typescript); err != nil {
		fmt.Fprintln(os.Stderr, "roundtrips:", err)
		os.Exit(1)
	}
}

func run(window time.Duration, rounds int, python, typescript string) error {
	bin := os.Getenv("CLARIFY_BIN")
	if bin == "" {
		return fmt.Errorf("set CLARIFY_BIN to a clarify binary")
	}
	dir, err := os.MkdirTemp("", "clarify-roundtrips-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db := "sqlite://" + filepath.Join(dir, "clarify.db")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	out, err := exec.Command(bin, "keys", "create", "--role", "admin", "--name", "bench", "--db", db, "--create").Output()
	if err != nil {
		return fmt.Errorf("clarify keys create: %w", err)
	}
	token := strings.TrimSpace(string(out))
	serve := exec.Command(bin, "serve", "--listen", addr, "--db", db)
	serve.Env = append(os.Environ(), "NO_COLOR=1", "RUST_LOG=warn")
	serve.Stderr = os.Stderr
	if err := serve.Start(); err != nil {
		return err
	}
	defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()
	url := "http://" + addr
	for i := 0; ; i++ {
		if resp, err := http.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if i > 300 {
			return fmt.Errorf("clarify serve did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go answer(ctx, url, token)

	modes := []struct {
		name string
		run  func(session string, stop *atomic.Bool, done *atomic.Int64) error
	}{
		{"Go clarify.Client Ask", func(s string, stop *atomic.Bool, done *atomic.Int64) error {
			return goAsk(url, token, s, stop, done)
		}},
		{"Go bare net/http create + wait", func(s string, stop *atomic.Bool, done *atomic.Int64) error {
			return bareLoop(url, token, s, stop, done)
		}},
	}
	if python != "" {
		modes = append(modes, struct {
			name string
			run  func(string, *atomic.Bool, *atomic.Int64) error
		}{"Python clarify_hitl.Client.ask (32 threads)", func(s string, stop *atomic.Bool, done *atomic.Int64) error {
			return external(stop, done, python, "-c", pythonScript, url, token, s)
		}})
	}
	if typescript != "" {
		modes = append(modes, struct {
			name string
			run  func(string, *atomic.Bool, *atomic.Int64) error
		}{"TypeScript Client.ask (32 concurrent)", func(s string, stop *atomic.Bool, done *atomic.Int64) error {
			return external(stop, done, "node", "--input-type=module", "-e",
				strings.ReplaceAll(typescriptScript, "SDK_DIST", filepath.Join(typescript, "dist", "index.js")), url, token, s)
		}})
	}
	results, cpus := map[string][]float64{}, map[string][]float64{}
	for round := 0; round < rounds; round++ {
		for i, m := range modes {
			session := fmt.Sprintf("bench-%d-%d", round, i)
			var stop atomic.Bool
			var done atomic.Int64
			errc := make(chan error, 1)
			go func() { errc <- m.run(session, &stop, &done) }()
			time.Sleep(time.Second)
			before, started, cpu := done.Load(), time.Now(), selfCPU()
			time.Sleep(window)
			count := done.Load() - before
			rate := float64(count) / time.Since(started).Seconds()
			if count > 0 && !strings.HasPrefix(m.name, "Python") && !strings.HasPrefix(m.name, "TypeScript") {
				cpus[m.name] = append(cpus[m.name], (selfCPU()-cpu).Seconds()*1e6/float64(count))
			}
			stop.Store(true)
			if err := <-errc; err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			results[m.name] = append(results[m.name], rate)
			fmt.Fprintf(os.Stderr, "round %d: %-45s %7.0f round trips/s\n", round+1, m.name, rate)
		}
	}
	fmt.Printf("| client (%d concurrent) | round trips/s, each round | this process's CPU µs per round trip |\n|---|---|---|\n", workers)
	for _, m := range modes {
		fmt.Printf("| %s | %s | %s |\n", m.name, join(results[m.name]), join(cpus[m.name]))
	}
	return nil
}

func join(values []float64) string {
	var parts []string
	for _, v := range values {
		parts = append(parts, fmt.Sprintf("%.0f", v))
	}
	return strings.Join(parts, ", ")
}

// selfCPU is the CPU time this process has used: the Go loops' and the person's, who answers
// the same way in every mode.
func selfCPU() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// answer is the person: it takes every request.created of the stream and answers it at once.
func answer(ctx context.Context, url, token string) {
	c := clarify.NewClient(url, token)
	ids := make(chan string, 4096)
	for i := 0; i < workers; i++ {
		go func() {
			body := []byte(`{"text": "yes"}`)
			for id := range ids {
				if err := post(url+"/v1/requests/"+id+"/answer", token, body, nil); err != nil {
					fmt.Fprintln(os.Stderr, "answering:", err)
				}
			}
		}()
	}
	// From the first event on: the database is new, and no request is missed while the stream
	// connects.
	stream := c.Events(ctx, "0")
	for stream.Next() {
		if e := stream.Event(); e.Type == "request.created" {
			ids <- e.Record.ID
		}
	}
}

func goAsk(url, token, session string, stop *atomic.Bool, done *atomic.Int64) error {
	c := clarify.NewClient(url, token)
	return parallel(func() error {
		for !stop.Load() {
			o, err := c.Ask(context.Background(), clarify.Request{Questions: []clarify.Question{{Text: "Ship it?"}}, Session: session})
			if err != nil {
				return err
			}
			if o.Status != clarify.StatusAnswered {
				return fmt.Errorf("outcome %s", o.Status)
			}
			done.Add(1)
		}
		return nil
	})
}

var bare = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

func post(url, token string, body []byte, out any) error {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	return send(req, out)
}

func send(req *http.Request, out any) error {
	resp, err := bare.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// bareLoop is the same two calls by hand: create, then long-poll until resolved.
func bareLoop(url, token, session string, stop *atomic.Bool, done *atomic.Int64) error {
	return parallel(func() error {
		var n int64
		for !stop.Load() {
			n++
			body := []byte(`{"questions": [{"text": "Ship it?"}], "session": "` + session + `", "idempotency_key": "` + clarify.NewIdempotencyKey() + `"}`)
			var record struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			}
			if err := post(url+"/v1/requests", token, body, &record); err != nil {
				return err
			}
			for record.Status == "pending" {
				req, _ := http.NewRequest(http.MethodGet, url+"/v1/requests/"+record.ID+"/wait?timeout_seconds=60", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				if err := send(req, &record); err != nil {
					return err
				}
			}
			done.Add(1)
		}
		return nil
	})
}

func parallel(f func() error) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- f() }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// external runs another language's loop: it prints a line per completed round trip and stops
// when its standard input closes.
func external(stop *atomic.Bool, done *atomic.Int64, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		for !stop.Load() {
			time.Sleep(20 * time.Millisecond)
		}
		stdin.Close()
	}()
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if n, err := strconv.Atoi(strings.TrimSpace(lines.Text())); err == nil {
			done.Add(int64(n))
		}
	}
	return cmd.Wait()
}

// The Python loop: 32 threads sharing one Client; each prints 1 per round trip.
const pythonScript = `
import sys, threading
from clarify_hitl import Client
url, token, session = sys.argv[1:4]
client = Client(url, token)
stop = threading.Event()
lock = threading.Lock()
def loop():
    while not stop.is_set():
        outcome = client.ask("Ship it?", session=session)
        assert outcome.status == "answered", outcome.status
        with lock:
            print(1, flush=True)
threads = [threading.Thread(target=loop) for _ in range(32)]
for t in threads: t.start()
sys.stdin.read()
stop.set()
for t in threads: t.join()
`

// The TypeScript loop: 32 concurrent asks on one Client; each prints 1 per round trip.
const typescriptScript = `
import { Client } from "SDK_DIST";
const [url, token, session] = process.argv.slice(1);
const client = new Client({ url, token });
let stop = false;
process.stdin.on("end", () => { stop = true; });
process.stdin.resume();
async function loop() {
  while (!stop) {
    const outcome = await client.ask({ question: "Ship it?", session });
    if (outcome.status !== "answered") throw new Error(outcome.status);
    process.stdout.write("1\n");
  }
}
await Promise.all(Array.from({ length: 32 }, loop));
`
