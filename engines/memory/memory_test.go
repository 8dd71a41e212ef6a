package memory_test

import (
	"testing"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/memory"
)

func driver(t *testing.T) engine.Driver {
	d, err := engine.Lookup(memory.Name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestConformance(t *testing.T) { enginetest.Run(t, driver(t)) }
