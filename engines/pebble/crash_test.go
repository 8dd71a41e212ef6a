package pebble_test

import (
	"testing"

	"github.com/minikafka/minikafka/engine/crashtest"
	"github.com/minikafka/minikafka/engines/pebble"
)

func TestCrash(t *testing.T) { crashtest.Run(t, pebble.Driver) }
