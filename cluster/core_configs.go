package cluster

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterConfigs serves AlterConfigs: each resource's configs become exactly
// the ones the request lists.
func (c *ControllerCore) alterConfigs(o *Op, q Quorum, req *kmsg.AlterConfigsRequest) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	alts := Alterations(req)
	c.alter(o, q, alts, req.ValidateOnly, func(errs []error) {
		for i, rr := range req.Resources {
			sr := kmsg.NewAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
			sr.ErrorCode, sr.ErrorMessage = code(errs[i]), message(errs[i])
			resp.Resources = append(resp.Resources, sr)
		}
		o.finish(resp, nil)
	})
}

// incrementalAlterConfigs serves IncrementalAlterConfigs: each resource's
// operations on the configs it has.
func (c *ControllerCore) incrementalAlterConfigs(o *Op, q Quorum, req *kmsg.IncrementalAlterConfigsRequest) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	alts := Alterations(req)
	c.alter(o, q, alts, req.ValidateOnly, func(errs []error) {
		for i, rr := range req.Resources {
			sr := kmsg.NewIncrementalAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
			sr.ErrorCode, sr.ErrorMessage = code(errs[i]), message(errs[i])
			resp.Resources = append(resp.Resources, sr)
		}
		o.finish(resp, nil)
	})
}

// alter decides every alteration on one image and commits the valid ones
// as one batch, then answers with each one's error (nil: done, or valid
// when validateOnly). A resource named twice in one request is refused
// with INVALID_REQUEST at each mention, as Kafka does.
func (c *ControllerCore) alter(o *Op, q Quorum, alts []ConfigAlteration, validateOnly bool, answer func([]error)) {
	c.ready(o, q, func(err error) {
		errs := make([]error, len(alts))
		type resource struct {
			typ  kmsg.ConfigResourceType
			name string
		}
		seen := map[resource]int{}
		for _, a := range alts {
			seen[resource{a.Type, a.Name}]++
		}
		var recs []Record
		var altered []int
		for i, a := range alts {
			errs[i] = err
			if errs[i] == nil && seen[resource{a.Type, a.Name}] > 1 {
				errs[i] = fmt.Errorf("resource %v %q named more than once: %w", a.Type, a.Name, kerr.InvalidRequest)
			}
			if errs[i] != nil {
				continue
			}
			var rs []Record
			if rs, errs[i] = c.cfg.Settings.AlterConfigs(o.img, a); errs[i] == nil && !validateOnly && len(rs) > 0 {
				recs = append(recs, rs...)
				altered = append(altered, i)
			}
		}
		o.commit(recs, func(_ uint64, err error) {
			for _, i := range altered {
				errs[i] = err
				if err == nil {
					c.log.Info("altered configs", "resource", alts[i].Type, "name", alts[i].Name, "ops", len(alts[i].Ops))
				}
			}
			answer(errs)
		})
	})
}

// Alterations are the resources' alterations of an AlterConfigs or
// IncrementalAlterConfigs request, in its order (nil for another request).
func Alterations(req kmsg.Request) []ConfigAlteration {
	var alts []ConfigAlteration
	switch r := req.(type) {
	case *kmsg.AlterConfigsRequest:
		for _, rr := range r.Resources {
			a := ConfigAlteration{Type: rr.ResourceType, Name: rr.ResourceName, Replace: true}
			for _, rc := range rr.Configs {
				a.Ops = append(a.Ops, ConfigOp{Name: rc.Name, Op: kmsg.IncrementalAlterConfigOpSet, Value: rc.Value})
			}
			alts = append(alts, a)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		for _, rr := range r.Resources {
			a := ConfigAlteration{Type: rr.ResourceType, Name: rr.ResourceName}
			for _, rc := range rr.Configs {
				a.Ops = append(a.Ops, ConfigOp{Name: rc.Name, Op: rc.Op, Value: rc.Value})
			}
			alts = append(alts, a)
		}
	}
	return alts
}

// Settled reports whether m already shows alteration a done: deciding it
// again would change nothing. Every operation is idempotent, so a broker
// waits for this on its own image before it answers, and a later request
// to it sees the change.
func (s Settings) Settled(m *Metadata, a ConfigAlteration) bool {
	recs, err := s.AlterConfigs(m, a)
	return err == nil && len(recs) == 0
}
