package broker

// Every engine registers itself when imported; the broker carries them all
// so that Config.Engine can name any of them.
import (
	_ "github.com/minikafka/minikafka/engines/badger"
	_ "github.com/minikafka/minikafka/engines/memory"
	_ "github.com/minikafka/minikafka/engines/pebble"
	_ "github.com/minikafka/minikafka/engines/segment"
)
