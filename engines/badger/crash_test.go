package badger_test

import (
	"testing"

	"github.com/minikafka/minikafka/engine/crashtest"
	"github.com/minikafka/minikafka/engines/badger"
)

func TestCrash(t *testing.T) { crashtest.Run(t, badger.Driver) }
