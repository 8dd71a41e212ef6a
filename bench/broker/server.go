package broker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is one running Kafka-compatible server under test.
type Server interface {
	// Addr is host:port for the clients.
	Addr() string
	// PeakRSS is the server's peak resident memory so far (VmHWM), or an
	// error when it cannot be measured (a server inside this process).
	PeakRSS() (int64, error)
	// Stop shuts the server down and releases it.
	Stop() error
}

// Target is a server kind the benchmark measures, started fresh for each
// repetition on an empty data directory.
type Target struct {
	// Name labels the target in the report: "kfake", "segment", ...
	Name string
	// Reference marks the target the others are compared with (kfake).
	Reference bool
	Start     func(ctx context.Context, dir string) (Server, error)
}

// Child is a server running as a child process, so its memory is its own
// and measurable.
type Child struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
	err  error // the process's exit, valid once done is closed
	tail *tailBuffer
}

// ChildConfig says how to start a child server.
type ChildConfig struct {
	// Path and Args are the program and its arguments.
	Path string
	Args []string
	// Addr is where the server listens; empty means the child prints its
	// address as the first line of its stdout.
	Addr string
	// Log receives the child's stderr (and stdout after the address line).
	Log io.Writer
	// Ready bounds the wait for the server to accept connections.
	Ready time.Duration
}

// StartChild starts the child and waits until its address accepts TCP
// connections.
func StartChild(ctx context.Context, cfg ChildConfig) (*Child, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Ready <= 0 {
		cfg.Ready = 30 * time.Second
	}
	cmd := exec.Command(cfg.Path, cfg.Args...)
	tail := &tailBuffer{max: 1024}
	cmd.Stderr = io.MultiWriter(cfg.Log, tail)
	var stdout io.ReadCloser
	if cfg.Addr == "" {
		var err error
		if stdout, err = cmd.StdoutPipe(); err != nil {
			return nil, fmt.Errorf("child %s: %w", cfg.Path, err)
		}
	} else {
		cmd.Stdout = cfg.Log
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Path, err)
	}
	c := &Child{cmd: cmd, addr: cfg.Addr, done: make(chan struct{}), tail: tail}
	addrCh := make(chan string, 1)
	if stdout != nil {
		go func() {
			r := bufio.NewReader(stdout)
			line, _ := r.ReadString('\n')
			addrCh <- strings.TrimSpace(line)
			_, _ = io.Copy(cfg.Log, r)
		}()
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	if err := c.waitReady(ctx, cfg.Ready, addrCh); err != nil {
		_ = c.Stop()
		if t := c.tail.String(); t != "" {
			err = fmt.Errorf("%w; its stderr ends with: %s", err, t)
		}
		return nil, fmt.Errorf("child %s: %w", filepath.Base(cfg.Path), err)
	}
	return c, nil
}

func (c *Child) waitReady(ctx context.Context, limit time.Duration, addrCh <-chan string) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if c.addr == "" {
		select {
		case c.addr = <-addrCh:
			if c.addr == "" {
				return errors.New("printed no address")
			}
		case <-c.done:
			return fmt.Errorf("exited before printing its address: %v", c.err)
		case <-ctx.Done():
			return fmt.Errorf("no address within %v", limit)
		}
	}
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", c.addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-c.done:
			return fmt.Errorf("exited before accepting connections: %v", c.err)
		case <-ctx.Done():
			return fmt.Errorf("not accepting connections on %s within %v: %w", c.addr, limit, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Addr is where the child listens.
func (c *Child) Addr() string { return c.addr }

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// PeakRSS reads the child's VmHWM from /proc.
func (c *Child) PeakRSS() (int64, error) { return PeakRSS(c.cmd.Process.Pid) }

// stopGrace is how long a child gets to exit after SIGTERM before it is
// killed.
const stopGrace = 15 * time.Second

// Stop sends SIGTERM and waits for the exit, killing the child if it takes
// longer than stopGrace. A child that had already died is reported.
func (c *Child) Stop() error {
	select {
	case <-c.done:
		return fmt.Errorf("server exited on its own: %v", c.err)
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(stopGrace):
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("server did not exit within %v of SIGTERM; killed", stopGrace)
	}
}

// Kill ends the child with SIGKILL (no shutdown: a crash) and waits for it.
func (c *Child) Kill() error {
	select {
	case <-c.done:
		return fmt.Errorf("server exited on its own: %v", c.err)
	default:
	}
	if err := c.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill %d: %w", c.cmd.Process.Pid, err)
	}
	<-c.done
	return nil
}

// PeakRSS returns the peak resident set size (VmHWM) of process pid in
// bytes.
func PeakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("peak rss of %d: %w", pid, err)
	}
	defer f.Close()
	return parseVmHWM(f)
}

func parseVmHWM(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("peak rss: unexpected VmHWM line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("peak rss: %w", err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("peak rss: %w", err)
	}
	return 0, errors.New("peak rss: no VmHWM line")
}

// tailBuffer keeps the last max bytes written to it: a failed child's
// last words go into the error.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago, for servers that need their port on the command line.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}
