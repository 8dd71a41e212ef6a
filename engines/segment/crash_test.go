package segment_test

import (
	"testing"

	"github.com/minikafka/minikafka/engine/crashtest"
	"github.com/minikafka/minikafka/engines/segment"
)

func TestCrash(t *testing.T) { crashtest.Run(t, segment.Driver) }
