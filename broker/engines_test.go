package broker

// The package's own tests open brokers on every engine.
import _ "github.com/minikafka/minikafka/engines/all"
