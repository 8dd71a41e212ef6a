// Command cli talks to mini-kafka, or any Kafka-compatible broker, with the
// franz-go client: produce and consume records, manage topics, show metadata.
//
//	cli [-brokers host:port,...] <command> [flags] [args]
//
// Commands (one file each; a new command registers itself in its file's init):
//
//	produce TOPIC [-key K] [VALUE...]   values as arguments, else one per stdin line
//	consume TOPIC [-from-beginning] [-n N] [-keys] [-partition P]
//	topics create NAME [-partitions N] | list | describe NAME | delete NAME
//	config describe TOPIC [-all] | set TOPIC k=v... | delete TOPIC k...  (-cluster: broker defaults)
//	delete-records TOPIC -offset N [-partition P]   move the log start
//	elect-leaders [-unclean] TOPIC [-partition P]   preferred (or unclean) leader election
//	reassign -topic T [-partition P] -replicas 2,3,4 [-throttle BYTES] [-wait] | -cancel | -unthrottle | -list   move replicas
//	log-dirs [TOPIC...]                 each broker's replicas: size and lag
//	transactions list [-state S] | describe ID... | producers TOPIC [-partition P]
//	meta                                brokers, controller, topics
//
// Keyed records are routed with Kafka's murmur2 partitioner, so a key lands on
// the partition the Java client and librdkafka (murmur2_random) would choose.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// command is one subcommand. run gets the arguments after the command name.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

// commands is filled by each command file's init, so adding a command (for
// example consumer groups) touches only its own file.
var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("cli: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// env is what every command shares: where the brokers are and where output
// goes. Tests build one with buffers instead of the process's stdio.
type env struct {
	brokers string
	timeout time.Duration
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	// extra client options, appended after the defaults (tests use it).
	opts []kgo.Opt
}

// addGlobal registers the flags every command accepts, so -brokers works
// before and after the command name.
func (e *env) addGlobal(fs *flag.FlagSet) {
	fs.StringVar(&e.brokers, "brokers", e.brokers, "comma-separated seed brokers (host:port)")
	fs.DurationVar(&e.timeout, "timeout", e.timeout, "how long a request may wait for the brokers (admin requests; produce: per record; consume uses -idle)")
}

func (e *env) seeds() []string {
	var out []string
	for _, s := range strings.Split(e.brokers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// client opens a franz-go client on the seed brokers with opts added.
// session is a client for one admin command and a context bounded by
// -timeout; done releases both.
func (e *env) session(ctx context.Context, opts ...kgo.Opt) (*kgo.Client, context.Context, func(), error) {
	cl, err := e.client(opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	return cl, ctx, func() { cancel(); cl.Close() }, nil
}

func (e *env) client(opts ...kgo.Opt) (*kgo.Client, error) {
	seeds := e.seeds()
	if len(seeds) == 0 {
		return nil, errors.New("no brokers: set -brokers host:port")
	}
	all := []kgo.Opt{kgo.SeedBrokers(seeds...)}
	all = append(all, opts...)
	all = append(all, e.opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", e.brokers, err)
	}
	return cl, nil
}

// errUsage marks an error that is the user's: the usage is printed with it.
var errUsage = errors.New("usage")

// errBadFlags: the flag package has already printed the problem and the
// command's flags.
var errBadFlags = fmt.Errorf("%w: bad flags", errUsage)

// parseFlags is fs.Parse with errors mapped for run.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return errBadFlags
	}
	return err
}

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// adminVerb is one verb of an admin command (topics, groups): it gets the
// arguments after its name and an admin client.
type adminVerb struct {
	name string
	run  func(ctx context.Context, e *env, adm *kadm.Client, args []string) error
}

// runAdmin parses the global flags of command noun, picks the verb named
// by the first argument and runs it with an admin client, within e.timeout.
func runAdmin(ctx context.Context, e *env, noun string, verbs []adminVerb, args []string) error {
	fs := flag.NewFlagSet(noun, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	e.addGlobal(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	names := make([]string, len(verbs))
	for i, v := range verbs {
		names[i] = v.name
	}
	if fs.NArg() == 0 {
		return usageErr("%s needs one of %s", noun, strings.Join(names, ", "))
	}
	i := slices.Index(names, fs.Arg(0))
	if i < 0 {
		last := len(names) - 1
		return usageErr("%s %q: want %s or %s", noun, fs.Arg(0), strings.Join(names[:last], ", "), names[last])
	}
	adm, ctx, done, err := e.adminSession(ctx)
	if err != nil {
		return err
	}
	defer done()
	err = verbs[i].run(ctx, e, adm, fs.Args()[1:])
	if errors.Is(err, kerr.NotController) {
		err = fmt.Errorf("%w (no active controller: are a majority of the -controllers voters up?)", err)
	}
	return err
}

// adminSession is an admin client and a context for one admin command.
// A broker waits for the active controller (or, for DeleteRecords, for the
// replicas) up to an admin request's own timeout (kadm's default is 15 s)
// and then answers NOT_CONTROLLER or REQUEST_TIMED_OUT, which franz-go
// retries for up to 30 s more. Both stay inside -timeout, so that a lost
// quorum is reported as what it is, not as our own deadline.
func (e *env) adminSession(ctx context.Context) (*kadm.Client, context.Context, func(), error) {
	cl, ctx, done, err := e.session(ctx, kgo.RetryTimeout(e.timeout/2))
	if err != nil {
		return nil, nil, nil, err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(max(e.timeout*2/5, time.Second).Milliseconds()))
	return adm, ctx, done, nil
}

// run executes the command line args (without the program name) and returns
// the process exit code: 0 success, 1 failure, 2 bad usage.
func run(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("cli", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	e.addGlobal(fs)
	fs.Usage = func() { printUsage(e.stderr, fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		printUsage(e.stderr, fs)
		return 2
	}
	c, ok := commands[fs.Arg(0)]
	if !ok {
		fmt.Fprintf(e.stderr, "cli: unknown command %q\n", fs.Arg(0))
		printUsage(e.stderr, fs)
		return 2
	}
	err := c.run(ctx, e, fs.Args()[1:])
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errBadFlags):
		return 2
	case errors.Is(err, errUsage):
		fmt.Fprintf(e.stderr, "cli %s: %v\n", c.name, err)
		return 2
	default:
		fmt.Fprintf(e.stderr, "cli %s: %v\n", c.name, err)
		return 1
	}
}

func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "usage: cli [-brokers host:port,...] <command> [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	for _, n := range slices.Sorted(maps.Keys(commands)) {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nglobal flags:")
	fs.PrintDefaults()
}

// parseInterleaved parses flags that may come before, between or after
// positional arguments (`produce TOPIC -key K VALUE`), which the flag package
// alone does not allow. Everything after "--" is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var tail []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, tail = args[:i], args[i+1:]
	}
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return append(pos, tail...), nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{
		brokers: "localhost:9092",
		timeout: 10 * time.Second,
		stdin:   os.Stdin,
		stdout:  os.Stdout,
		stderr:  os.Stderr,
	}
	if b := os.Getenv("KAFKA_BROKERS"); b != "" {
		e.brokers = b
	}
	os.Exit(run(ctx, e, os.Args[1:]))
}
