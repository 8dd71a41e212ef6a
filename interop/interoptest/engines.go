package interoptest

// Every engine registers itself when imported. The interop suites import
// them all here, so engine.Names lists every engine there is, whether or not
// some binary forgot one.
import (
	_ "github.com/minikafka/minikafka/engines/badger"
	_ "github.com/minikafka/minikafka/engines/memory"
	_ "github.com/minikafka/minikafka/engines/pebble"
	_ "github.com/minikafka/minikafka/engines/segment"
)
