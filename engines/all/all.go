// Package all registers every storage engine mini-kafka ships: import it
// for its side effect, as a program imports the database/sql drivers it
// wants. The broker itself imports none; cmd/broker, the benchmarks and the
// tests that run over every engine import this package.
//
//	import _ "github.com/minikafka/minikafka/engines/all"
package all

import (
	_ "github.com/minikafka/minikafka/engines/badger"
	_ "github.com/minikafka/minikafka/engines/memory"
	_ "github.com/minikafka/minikafka/engines/pebble"
	_ "github.com/minikafka/minikafka/engines/segment"
)
