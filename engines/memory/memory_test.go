package memory_test

import (
	"testing"

	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/memory"
)

func TestConformance(t *testing.T) { enginetest.Run(t, memory.Driver) }
