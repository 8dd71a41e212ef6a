// Package netlab makes real hosts on one machine: a bridge and one network
// namespace per host, each joined to the bridge by a veth pair and given
// its own address, so that brokers started in them (broker/harness's Host)
// talk over a network that a test or benchmark can break. The machine's
// own namespace reaches every host through the bridge: clients run there.
//
// Two faults: Cut takes a host off the network (its veth down: nobody
// reaches it, it reaches nobody); Isolate cuts it off from the other hosts
// only (blackhole routes both ways) while the clients in the machine's
// namespace still reach it. It needs root and iproute2's ip; New says
// ErrUnavailable otherwise.
package netlab

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/minikafka/minikafka/broker/harness"
)

// ErrUnavailable marks a machine where network namespaces cannot be made
// (not root, no ip, or the kernel refuses): callers skip, saying why.
var ErrUnavailable = errors.New("netlab: network namespaces unavailable")

// Lab is a bridge and its hosts, numbered from 1. Its methods are safe for
// concurrent use.
type Lab struct {
	subnet int
	tag    string
	bridge string
	ns     []string

	mu       sync.Mutex
	isolated map[int]bool
	release  func() // the machine-wide lock (Exclusive), held until Close
}

// New makes n hosts at 10.199.S.1 to 10.199.S.n (S random per lab, the
// bridge at 10.199.S.254). Close removes them.
func New(n int) (*Lab, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: they need root", ErrUnavailable)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("%w: they need iproute2's ip", ErrUnavailable)
	}
	release, err := Exclusive()
	if err != nil {
		return nil, err
	}
	l := &Lab{subnet: 10 + rand.IntN(240), isolated: map[int]bool{}, release: release}
	l.tag = fmt.Sprintf("%d%d", os.Getpid()%10000, rand.IntN(100))
	l.bridge = "mkbr" + l.tag
	if err := l.ip("link", "add", l.bridge, "type", "bridge"); err != nil {
		release()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	err = l.build(n)
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func (l *Lab) build(n int) error {
	if err := l.forward("-I"); err != nil {
		return err
	}
	steps := [][]string{
		{"addr", "add", fmt.Sprintf("10.199.%d.254/24", l.subnet), "dev", l.bridge},
		{"link", "set", l.bridge, "up"},
	}
	for i := 1; i <= n; i++ {
		ns := fmt.Sprintf("mk%s-%d", l.tag, i)
		host, peer := l.hostVeth(i), fmt.Sprintf("mkp%s%d", l.tag, i)
		l.ns = append(l.ns, ns)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"link", "add", host, "type", "veth", "peer", "name", peer},
			[]string{"link", "set", peer, "netns", ns},
			[]string{"link", "set", host, "master", l.bridge},
			[]string{"link", "set", host, "up"},
			[]string{"-n", ns, "addr", "add", l.Addr(i) + "/24", "dev", peer},
			[]string{"-n", ns, "link", "set", peer, "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"},
		)
	}
	for _, s := range steps {
		if err := l.ip(s...); err != nil {
			return err
		}
	}
	return nil
}

// Size is the number of hosts.
func (l *Lab) Size() int { return len(l.ns) }

// Addr is host i's address.
func (l *Lab) Addr(i int) string { return fmt.Sprintf("10.199.%d.%d", l.subnet, i) }

// Netns is host i's network namespace.
func (l *Lab) Netns(i int) string { return l.ns[i-1] }

// Hosts places a cluster's node i on host i, its Kafka listener on
// kafkaPort and its controller on controllerPort.
func (l *Lab) Hosts(kafkaPort, controllerPort int) []harness.Host {
	var hs []harness.Host
	for i := 1; i <= len(l.ns); i++ {
		hs = append(hs, harness.Host{Netns: l.Netns(i),
			Addr:           fmt.Sprintf("%s:%d", l.Addr(i), kafkaPort),
			ControllerAddr: fmt.Sprintf("%s:%d", l.Addr(i), controllerPort)})
	}
	return hs
}

func (l *Lab) hostVeth(i int) string { return fmt.Sprintf("mkh%s%d", l.tag, i) }

// Cut takes host i off the network; Heal puts it back.
func (l *Lab) Cut(i int) error  { return l.ip("link", "set", l.hostVeth(i), "down") }
func (l *Lab) Heal(i int) error { return l.ip("link", "set", l.hostVeth(i), "up") }

// Isolate cuts host i off from every other host, both ways, while the
// machine's own namespace (the clients) still reaches it: each side drops
// what it would send to the other (a blackhole route), so connections
// between them stall as over a broken link and new ones fail. Rejoin
// undoes it.
func (l *Lab) Isolate(i int) error { return l.routes(i, "add") }
func (l *Lab) Rejoin(i int) error  { return l.routes(i, "del") }

func (l *Lab) routes(i int, op string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.isolated[i] == (op == "add") {
		return nil
	}
	var errs []error
	for j := 1; j <= len(l.ns); j++ {
		if j == i {
			continue
		}
		errs = append(errs,
			l.ip("-n", l.Netns(i), "route", op, "blackhole", l.Addr(j)+"/32"),
			l.ip("-n", l.Netns(j), "route", op, "blackhole", l.Addr(i)+"/32"))
	}
	l.isolated[i] = op == "add"
	return errors.Join(errs...)
}

// Command is name with args run in host i's namespace.
func (l *Lab) Command(i int, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", l.Netns(i), name}, args...)...)
}

func (l *Lab) ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("netlab: ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// forward lets the bridge forward between its own ports ("-I") or stops
// letting it ("-D"). A Docker engine loads br_netfilter and sets the
// FORWARD policy to DROP, which without this rule drops every packet
// between two hosts of the lab. Without iptables there is no such policy
// to open.
func (l *Lab) forward(op string) error {
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil
	}
	out, err := exec.Command("iptables", op, "FORWARD", "-i", l.bridge, "-o", l.bridge, "-j", "ACCEPT").CombinedOutput()
	if err != nil {
		return fmt.Errorf("netlab: iptables %s FORWARD for %s: %v: %s", op, l.bridge, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Close removes the namespaces (their veths go with them), the bridge and
// its forwarding rule.
func (l *Lab) Close() error {
	defer l.release()
	errs := []error{l.forward("-D")}
	for _, ns := range l.ns {
		errs = append(errs, l.ip("netns", "del", ns))
	}
	return errors.Join(append(errs, l.ip("link", "del", l.bridge))...)
}
