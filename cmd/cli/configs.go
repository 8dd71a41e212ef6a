package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(command{
		name:    "config",
		summary: "config describe TOPIC [-all] | set TOPIC k=v... | delete TOPIC k...  (-cluster for the cluster-wide broker defaults instead of TOPIC)",
		run:     runConfig,
	})
}

// configVerbs are the verbs of `config`, in the order usage lists them.
var configVerbs = []adminVerb{
	{"describe", configDescribe},
	{"set", configSet},
	{"delete", configDelete},
}

// runConfig is Kafka's kafka-configs for topics and the cluster-wide broker
// defaults: describe with DescribeConfigs, set and delete with
// IncrementalAlterConfigs, which change only the keys named. A change is
// made by the controller and applied by every broker without a restart.
func runConfig(ctx context.Context, e *env, args []string) error {
	return runAdmin(ctx, e, "config", configVerbs, args)
}

// configTarget parses a verb's flags and its resource: TOPIC, or -cluster
// (the broker resource named ""). The rest of the positional arguments
// come back.
func configTarget(e *env, verb string, args []string, extra func(*flag.FlagSet)) (kmsg.ConfigResourceType, string, []string, error) {
	fs := flag.NewFlagSet("config "+verb, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	e.addGlobal(fs)
	clusterWide := fs.Bool("cluster", false, "the cluster-wide broker defaults instead of a topic")
	if extra != nil {
		extra(fs)
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 0, "", nil, err
	}
	if *clusterWide {
		return kmsg.ConfigResourceTypeBroker, "", pos, nil
	}
	if len(pos) == 0 {
		return 0, "", nil, usageErr("config %s needs a TOPIC (or -cluster)", verb)
	}
	return kmsg.ConfigResourceTypeTopic, pos[0], pos[1:], nil
}

// configDescribe prints KEY, VALUE and SOURCE of the resource's configs:
// those set (dynamic), or with -all every one, defaults included.
func configDescribe(ctx context.Context, e *env, adm *kadm.Client, args []string) error {
	var all bool
	typ, name, rest, err := configTarget(e, "describe", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&all, "all", false, "every config, defaults included")
	})
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageErr("config describe takes one resource, got %q too", rest)
	}
	var rcs kadm.ResourceConfigs
	if typ == kmsg.ConfigResourceTypeTopic {
		rcs, err = adm.DescribeTopicConfigs(ctx, name)
	} else {
		rcs, err = adm.DescribeBrokerConfigs(ctx)
	}
	if err == nil && len(rcs) != 1 {
		err = fmt.Errorf("%d resources in the answer, want 1", len(rcs))
	}
	if err == nil {
		err = rcs[0].Err
	}
	if err != nil {
		return fmt.Errorf("describe configs of %s: %w", resourceText(typ, name), err)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, c := range rcs[0].Configs {
		if !all && !dynamicSource(c.Source) {
			continue
		}
		v := c.MaybeValue()
		if v == "" {
			v = `""` // an empty value still fills its column
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Key, v, c.Source)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func dynamicSource(s kmsg.ConfigSource) bool {
	return s == kmsg.ConfigSourceDynamicTopicConfig || s == kmsg.ConfigSourceDynamicBrokerConfig ||
		s == kmsg.ConfigSourceDynamicDefaultBrokerConfig
}

func resourceText(typ kmsg.ConfigResourceType, name string) string {
	if typ == kmsg.ConfigResourceTypeBroker && name == "" {
		return "the cluster-wide broker defaults"
	}
	return fmt.Sprintf("%s %s", strings.ToLower(typ.String()), name)
}

func configSet(ctx context.Context, e *env, adm *kadm.Client, args []string) error {
	typ, name, rest, err := configTarget(e, "set", args, nil)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return usageErr("config set needs key=value pairs")
	}
	var acs []kadm.AlterConfig
	for _, kv := range rest {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageErr("config set: want key=value, got %q", kv)
		}
		acs = append(acs, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	if err := alterConfigs(ctx, adm, typ, name, acs); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "set %d config(s) of %s\n", len(acs), resourceText(typ, name))
	return nil
}

func configDelete(ctx context.Context, e *env, adm *kadm.Client, args []string) error {
	typ, name, rest, err := configTarget(e, "delete", args, nil)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return usageErr("config delete needs the keys to delete")
	}
	var acs []kadm.AlterConfig
	for _, k := range rest {
		acs = append(acs, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if err := alterConfigs(ctx, adm, typ, name, acs); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "deleted %d config(s) of %s: the defaults apply\n", len(acs), resourceText(typ, name))
	return nil
}

// alterConfigs sends one IncrementalAlterConfigs; the resource's error,
// with the broker's reason, is the command's.
func alterConfigs(ctx context.Context, adm *kadm.Client, typ kmsg.ConfigResourceType, name string, acs []kadm.AlterConfig) error {
	var resps kadm.AlterConfigsResponses
	var err error
	if typ == kmsg.ConfigResourceTypeTopic {
		resps, err = adm.AlterTopicConfigs(ctx, acs, name)
	} else {
		resps, err = adm.AlterBrokerConfigs(ctx, acs)
	}
	if err == nil && len(resps) != 1 {
		err = fmt.Errorf("%d resources in the answer, want 1", len(resps))
	}
	if err == nil && resps[0].Err != nil {
		err = resps[0].Err
		if resps[0].ErrMessage != "" {
			err = fmt.Errorf("%w: %s", err, resps[0].ErrMessage)
		}
	}
	if err != nil {
		return fmt.Errorf("alter configs of %s: %w", resourceText(typ, name), err)
	}
	return nil
}
