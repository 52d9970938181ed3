package aophub_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// conformanceHub is the hub the conformance scenario runs against: the line
// tests/support/conformance_hub.py prints (clients/conformance/README.md).
type conformanceHub struct {
	URL           string `json:"url"`
	Token         string `json:"token"`
	Node          string `json:"node"`
	MaxWatches    int    `json:"max_watches"`
	MaxFrameBytes int64  `json:"max_frame_bytes"`
}

// hub is started once by TestMain for every test of this package.
var hub conformanceHub

func TestMain(m *testing.M) {
	stop, err := startHub()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance hub:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// startHub runs the shared launcher with the repository's Python
// ($AOPHUB_PYTHON, else .venv/bin/python of the checkout) and reads its line.
func startHub() (stop func(), err error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	python := os.Getenv("AOPHUB_PYTHON")
	if python == "" {
		python = filepath.Join(root, ".venv", "bin", "python")
	}
	if _, err := os.Stat(python); err != nil {
		return nil, fmt.Errorf("no Python with aophub installed at %s (run `make install`, or set AOPHUB_PYTHON): %w", python, err)
	}
	cmd := exec.Command(python, "-m", "tests.support.conformance_hub")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() {
		_ = stdin.Close() // the launcher stops the hub when its stdin ends
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &hub)
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("the launcher printed no ready line (%v):\n%s", err, stderr.String())
	}
	return stop, nil
}

// cutter is an HTTP client whose connections the test can cut, as a network
// failure would: it closes the TCP connection under the WebSocket.
type cutter struct {
	mu    sync.Mutex
	conns []net.Conn
	dials int
}

func (c *cutter) client() *http.Client {
	dialer := &net.Dialer{}
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, address)
			if err == nil {
				c.mu.Lock()
				c.conns = append(c.conns, conn)
				c.dials++
				c.mu.Unlock()
			}
			return conn, err
		},
	}}
}

// cut closes every connection dialled so far and returns how many it closed.
func (c *cutter) cut() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	closed := len(c.conns)
	for _, conn := range c.conns {
		_ = conn.Close()
	}
	c.conns = nil
	return closed
}

func (c *cutter) dialCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dials
}

// testContext is bounded, so that a hung step fails the test instead of the run.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
