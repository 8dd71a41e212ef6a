package memory

import "github.com/minikafka/minikafka/engine"

// notes describe this design for the benchmark reports (see engine.Notes).
var notes = engine.Notes{
	WritePath: "keeps each batch in a slice and syncs nothing: a reference line, not durable",
	ReadPath:  "copies batches out of its slice",
	CPU:       "a copy into its slice",
	Memory:    "every record, so its peak grows with what the cell produced",
}
