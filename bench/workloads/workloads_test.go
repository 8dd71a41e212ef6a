package workloads

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEmbeddedWorkloadsParse(t *testing.T) {
	require.NotEmpty(t, Names())
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			w, err := Load(name)
			require.NoError(t, err)
			assert.Equal(t, name, w.Name, "a workload's name is its file's")
			assert.NotEmpty(t, w.Title)
			for _, c := range w.Cells {
				assert.NotEmpty(t, c.Columns, "cell %s shows no figure", c.Name)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	cases := map[string]string{
		"unknown field":   "servers: [kfake]\ncells: [{name: a, steps: [{produce: {records: 1, recrods: 2}}]}]",
		"step of no kind": "servers: [kfake]\ncells: [{name: a, steps: [{as: x}]}]",
		"target on no cell": "servers: [kfake]\ncells: [{name: a, steps: [{consume: {}}]}]\n" +
			"targets: [{name: t, cell: b, server: kfake, figure: f, at_least: 1}]",
		"target with two bounds": "servers: [kfake]\ncells: [{name: a, steps: [{consume: {}}]}]\n" +
			"targets: [{name: t, cell: a, server: kfake, figure: f, at_least: 1, at_most: 2}]",
		"unknown stat": "servers: [kfake]\ncells: [{name: a, steps: [{consume: {}}]}]\n" +
			"targets: [{name: t, cell: a, server: kfake, figure: f, stat: p42, at_least: 1}]",
		"transactions of no records": "servers: [kfake]\ncells: [{name: a, steps: [{produce: {records: 1, transaction: {records: 0}}}]}]",
		"reference not a server":     "servers: [kfake]\nreference: segment\ncells: [{name: a, steps: [{consume: {}}]}]",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(text))
			assert.Error(t, err)
		})
	}
}

func TestShrunk(t *testing.T) {
	w, err := Parse([]byte("servers: [kfake]\nreps: 3\nquick: {divide: 20}\n" +
		"cells: [{name: a, steps: [{produce: {records: 1000, duration: 10s}}, {consume: {}}], columns: [consume.records]}]"))
	require.NoError(t, err)
	q := w.Shrunk()
	assert.Equal(t, 1, q.Cells[0].Reps)
	assert.EqualValues(t, 50, q.Cells[0].Steps[0].Produce.Records)
	assert.Equal(t, "500ms", q.Cells[0].Steps[0].Produce.Duration.String())
	assert.EqualValues(t, 1000, w.Cells[0].Steps[0].Produce.Records, "the workload itself is unchanged")
	assert.Equal(t, 100, w.Cells[0].Steps[0].Produce.RecordBytes, "the default record size")
	assert.Equal(t, "consume.records", w.Cells[0].Columns[0].Figure, "a bare column is its figure")
}
