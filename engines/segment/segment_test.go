package segment_test

import (
	"testing"

	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/segment"
)

func TestConformance(t *testing.T) { enginetest.Run(t, segment.Driver) }
