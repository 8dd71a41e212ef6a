package load

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCheckPolls: each anomaly of a consumer's polls is counted against
// the log at the end, and reads that follow the log count nothing.
func TestCheckPolls(t *testing.T) {
	final := Polls{0: {{0, "a"}, {1, "b"}, {2, "c"}, {3, "d"}}}
	cases := []struct {
		name  string
		polls Polls
		want  AuditResult
	}{
		{"in order", Polls{0: {{0, "a"}, {1, "b"}, {2, "c"}}}, AuditResult{}},
		{"from the middle", Polls{0: {{2, "c"}, {3, "d"}}}, AuditResult{}},
		{"went back", Polls{0: {{0, "a"}, {2, "c"}, {1, "b"}}}, AuditResult{Nonmonotonic: 1, PollSkips: 1}},
		{"skipped", Polls{0: {{0, "a"}, {3, "d"}}}, AuditResult{PollSkips: 1}},
		{"another record", Polls{0: {{0, "a"}, {1, "x"}}}, AuditResult{ReadMismatches: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got AuditResult
			checkPolls(&got, c.polls, final)
			assert.Equal(t, c.want, got)
		})
	}
}
