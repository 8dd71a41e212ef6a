// Child processes, and what the kernel counts for them: the benchmarks
// start every server under test this way (its CPU, memory and I/O are
// then its own, and it can be killed), and so do the tests that kill a
// broker with SIGKILL.
//
//	addr, _ := FreeAddr()
//	c, err := StartChild(ctx, ChildConfig{Path: bin, Args: args, Addr: addr})
//	defer c.Stop()
//	rss, _ := c.PeakRSS()
//
// The /proc readers (PeakRSS, CPU, ReadIO) are Linux-only and return an
// error elsewhere.

package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
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

// ChildConfig says how to start a child.
type ChildConfig struct {
	// Path and Args are the program and its arguments; the child inherits
	// this process's environment.
	Path string
	Args []string
	// Addr is where the child listens; empty means it prints its address
	// as the first line of its stdout.
	Addr string
	// Log receives the child's stderr, and its stdout after the address
	// line; nil discards them.
	Log io.Writer
	// Ready bounds the wait for the child to accept connections (default
	// 30 s).
	Ready time.Duration
}

// Child is a running child process.
type Child struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
	err  error // the process's exit, valid once done is closed
	tail *tail
}

// Start starts the child and waits until its address accepts TCP
// connections. A child that exits or never listens is an error that ends
// with its last words.
func StartChild(ctx context.Context, cfg ChildConfig) (*Child, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Ready <= 0 {
		cfg.Ready = 30 * time.Second
	}
	cmd := exec.Command(cfg.Path, cfg.Args...)
	t := &tail{}
	out := io.MultiWriter(cfg.Log, t)
	cmd.Stderr = out
	var stdout io.ReadCloser
	if cfg.Addr == "" {
		var err error
		if stdout, err = cmd.StdoutPipe(); err != nil {
			return nil, fmt.Errorf("child %s: %w", cfg.Path, err)
		}
	} else {
		cmd.Stdout = out
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Path, err)
	}
	c := &Child{cmd: cmd, addr: cfg.Addr, done: make(chan struct{}), tail: t}
	addrCh := make(chan string, 1)
	if stdout != nil {
		go func() {
			r := bufio.NewReader(stdout)
			line, _ := r.ReadString('\n')
			addrCh <- strings.TrimSpace(line)
			_, _ = io.Copy(out, r)
		}()
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	if err := c.waitReady(ctx, cfg.Ready, addrCh); err != nil {
		_ = c.Kill()
		if w := c.LastWords(); w != "" {
			err = fmt.Errorf("%w; its output ends with: %s", err, w)
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
			return fmt.Errorf("exited with no address printed: %v", c.err)
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

// Exited is closed once the child has exited, whatever ended it.
func (c *Child) Exited() <-chan struct{} { return c.done }

// LastWords is the end of what the child wrote (stderr, and stdout after
// its address line), on one line: a failing server's own account.
func (c *Child) LastWords() string { return c.tail.String() }

// PeakRSS is the child's peak resident set so far (VmHWM).
func (c *Child) PeakRSS() (int64, error) { return PeakRSS(c.Pid()) }

// stopGrace is how long a child gets to exit after SIGTERM before it is
// killed.
const stopGrace = 15 * time.Second

// Stop sends SIGTERM and waits for the exit, killing the child if it
// takes longer than stopGrace. A child that had already died is an error
// that says how, with its last words.
func (c *Child) Stop() error {
	if err := c.exitedErr(); err != nil {
		return err
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
	if err := c.exitedErr(); err != nil {
		return err
	}
	if err := c.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill %d: %w", c.Pid(), err)
	}
	<-c.done
	return nil
}

// exitedErr says how the child died, if it did on its own.
func (c *Child) exitedErr() error {
	select {
	case <-c.done:
	default:
		return nil
	}
	err := fmt.Errorf("server exited on its own: %v", c.err)
	if w := c.LastWords(); w != "" {
		err = fmt.Errorf("%w; its output ends with: %s", err, w)
	}
	return err
}

// tailBytes is how much of a child's output LastWords keeps.
const tailBytes = 400

// tail keeps the last tailBytes written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - tailBytes; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(strings.Fields(string(t.b)), " ")
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago, for servers that need their port on the command line. The port is
// drawn below the kernel's ephemeral range: a port the kernel hands out for
// ":0" is also what it gives the next outgoing connection of any process,
// and test packages running side by side took such a port between its
// check and the server's listen ("address already in use").
func FreeAddr() (string, error) {
	low := ephemeralLow()
	for range 100 {
		port := freePortMin + rand.IntN(low-freePortMin)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken: draw again
		}
		addr := ln.Addr().String()
		return addr, ln.Close()
	}
	return "", errors.New("free port: 100 ports below the ephemeral range were all taken")
}

// freePortMin is the lowest port FreeAddr draws: above the well-known and
// most registered services' ports.
const freePortMin = 10000

// ephemeralLow is the start of the kernel's ephemeral port range (Linux's
// ip_local_port_range), or IANA's 49152 where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > freePortMin+1000 {
				return n
			}
		}
	}
	return 49152
}
