package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// LoadEnginesRef reads the engine benchmark's checks against the raw-disk
// loop from path (results/engines.json, written by cmd/enginebench). A
// missing file is (nil, nil): the figure is optional.
func LoadEnginesRef(path string) (*EnginesRef, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engines reference: %w", err)
	}
	var doc struct {
		Date    string `json:"date"`
		Commit  string `json:"commit"`
		Targets []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
			Unit  string  `json:"unit"`
		} `json:"targets"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("engines reference %s: %w", path, err)
	}
	ref := &EnginesRef{Source: path, Date: doc.Date, Commit: doc.Commit}
	for _, t := range doc.Targets {
		if strings.Contains(t.Name, "vs raw") {
			ref.Checks = append(ref.Checks, RefCheck{Name: t.Name, Value: t.Value, Unit: t.Unit})
		}
	}
	return ref, nil
}
