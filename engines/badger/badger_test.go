package badger_test

import (
	"testing"

	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/badger"
)

func TestConformance(t *testing.T) { enginetest.Run(t, badger.Driver) }
