package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// LoadEnginesRef reads the engine benchmark's checks against the raw-disk
// loop from path (results/engines.json, written by cmd/bench -profile
// engines; files written before the checks had that name hold them as
// "targets"). A missing file is (nil, nil): the figure is optional.
func LoadEnginesRef(path string) (*EnginesRef, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engines reference: %w", err)
	}
	type check struct {
		Name  string  `json:"name"`
		Value float64 `json:"value"`
		Unit  string  `json:"unit"`
	}
	var doc struct {
		Date    string    `json:"date"`
		Started time.Time `json:"started"`
		Commit  string    `json:"commit"`
		Checks  []check   `json:"checks"`
		Targets []check   `json:"targets"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("engines reference %s: %w", path, err)
	}
	ref := &EnginesRef{Source: path, Date: doc.Date, Commit: doc.Commit}
	if !doc.Started.IsZero() {
		ref.Date = doc.Started.UTC().Format(time.RFC3339)
	}
	for _, t := range append(doc.Checks, doc.Targets...) {
		if strings.Contains(t.Name, "vs raw") {
			ref.Checks = append(ref.Checks, RefCheck{Name: t.Name, Value: t.Value, Unit: t.Unit})
		}
	}
	return ref, nil
}
