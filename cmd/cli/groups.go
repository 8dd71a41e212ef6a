package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

func init() {
	register(command{
		name:    "groups",
		summary: "groups list | describe GROUP | delete GROUP: consumer groups, their members, committed offsets and lag",
		run:     runGroups,
	})
}

// groupVerbs are the verbs of `groups`, in the order usage lists them.
var groupVerbs = []adminVerb{
	{"list", groupsList},
	{"describe", groupsDescribe},
	{"delete", groupsDelete},
}

func runGroups(ctx context.Context, e *env, args []string) error {
	return runAdmin(ctx, e, "groups", groupVerbs, args)
}

// groupsList prints one group per line: name, state, protocol type.
func groupsList(ctx context.Context, e *env, adm *kadm.Client, args []string) error {
	if len(args) != 0 {
		return usageErr("groups list takes no arguments, got %q", args)
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("list groups: %w", err)
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tSTATE\tTYPE")
	for _, g := range groups.Sorted() {
		fmt.Fprintf(w, "%s\t%s\t%s\n", g.Group, orDash(g.State), orDash(g.ProtocolType))
	}
	return w.Flush()
}

// groupsDescribe prints the group's state and protocol, its members with
// their assigned partitions, and for every partition the group committed
// or is assigned: the member, the committed offset, the log end and the
// lag.
func groupsDescribe(ctx context.Context, e *env, adm *kadm.Client, args []string) error {
	if len(args) != 1 {
		return usageErr("groups describe needs exactly one GROUP, got %q", args)
	}
	name := args[0]
	lags, err := adm.Lag(ctx, name)
	if err != nil {
		return fmt.Errorf("describe group %s: %w", name, err)
	}
	g, ok := lags[name]
	if !ok {
		return fmt.Errorf("describe group %s: no answer for it", name)
	}
	if g.DescribeErr != nil {
		return fmt.Errorf("describe group %s: %w", name, g.DescribeErr)
	}
	if g.State == "Dead" {
		return fmt.Errorf("group %s does not exist", name)
	}
	if g.FetchErr != nil {
		return fmt.Errorf("committed offsets of %s: %w", name, g.FetchErr)
	}
	fmt.Fprintf(e.stdout, "group %s  state %s  protocol %s  members %d  lag %d\n",
		name, g.State, orDash(g.Protocol), len(g.Members), g.Lag.Total())

	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "MEMBER\tINSTANCE\tCLIENT\tHOST\tASSIGNED")
	for _, m := range g.Members {
		instance := "-"
		if m.InstanceID != nil {
			instance = *m.InstanceID
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", m.MemberID, instance, m.ClientID, m.ClientHost, assignedText(m))
	}
	if err := w.Flush(); err != nil {
		return err
	}

	w = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tMEMBER\tCOMMITTED\tEND\tLAG")
	for _, l := range g.Lag.Sorted() {
		member := "-"
		if l.Member != nil {
			member = l.Member.MemberID
		}
		committed, lag := "-", "-"
		if l.Commit.At >= 0 {
			committed = fmt.Sprint(l.Commit.At)
		}
		if l.Err == nil && l.Lag >= 0 {
			lag = fmt.Sprint(l.Lag)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d\t%s\n", l.Topic, l.Partition, member, committed, l.End.Offset, lag)
	}
	return w.Flush()
}

// assignedText renders a member's consumer assignment as topic:p,p,...
func assignedText(m kadm.DescribedGroupMember) string {
	c, ok := m.Assigned.AsConsumer()
	if !ok || len(c.Topics) == 0 {
		return "-"
	}
	var parts []string
	for _, t := range c.Topics {
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		nums := make([]string, len(ps))
		for i, p := range ps {
			nums[i] = fmt.Sprint(p)
		}
		parts = append(parts, t.Topic+":"+strings.Join(nums, ","))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func groupsDelete(ctx context.Context, e *env, adm *kadm.Client, args []string) error {
	if len(args) != 1 {
		return usageErr("groups delete needs exactly one GROUP, got %q", args)
	}
	r, err := adm.DeleteGroup(ctx, args[0])
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return fmt.Errorf("delete group %s: %w", args[0], err)
	}
	fmt.Fprintf(e.stdout, "deleted group %s\n", args[0])
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
