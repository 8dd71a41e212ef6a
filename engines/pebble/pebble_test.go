package pebble_test

import (
	"testing"

	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/pebble"
)

func TestConformance(t *testing.T) { enginetest.Run(t, pebble.Driver) }
