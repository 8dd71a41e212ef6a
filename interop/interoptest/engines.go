package interoptest

// The interop suites run over every engine there is, whether or not some
// binary forgot one.
import _ "github.com/minikafka/minikafka/engines/all"
