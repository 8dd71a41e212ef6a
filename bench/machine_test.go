package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseMountInfo(t *testing.T) {
	cases := []struct {
		name                          string
		line                          string
		point, fstype, source, option string
		ok                            bool
	}{
		{
			name:  "root",
			line:  "23 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard",
			point: "/", fstype: "ext4", source: "/dev/vda", option: "rw,relatime; superblock rw,discard", ok: true,
		},
		{
			name:  "no optional fields, escaped space",
			line:  `40 23 0:35 / /mnt/my\040disk rw - tmpfs tmpfs rw,size=10k`,
			point: "/mnt/my disk", fstype: "tmpfs", source: "tmpfs", option: "rw; superblock rw,size=10k", ok: true,
		},
		{name: "garbage", line: "1 2 3", ok: false},
		{name: "empty", line: "", ok: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, f, s, o, ok := parseMountInfo(c.line)
			assert.Equal(t, c.ok, ok)
			if c.ok {
				assert.Equal(t, []string{c.point, c.fstype, c.source, c.option}, []string{p, f, s, o})
			}
		})
	}
}

func TestUnderDir(t *testing.T) {
	assert.True(t, underDir("/tmp/x", "/"))
	assert.True(t, underDir("/tmp/x", "/tmp"))
	assert.True(t, underDir("/tmp", "/tmp"))
	assert.False(t, underDir("/tmpfoo/x", "/tmp"), "a prefix that is not a path component")
}
