package badger

import "github.com/minikafka/minikafka/engine"

// notes describe this design for the benchmark reports (see engine.Notes).
var notes = engine.Notes{
	WritePath: "keeps values (every Kafka batch is larger than its 256-byte threshold) in a value log and only keys and pointers in its LSM; " +
		"the engine commits everything pending in one Badger transaction per round, which Badger makes durable with two fsyncs " +
		"(value log, then the memtable's WAL)",
	CommitCost: "two fsyncs per commit: its value log, then its WAL",
	ReadPath:   "walks its keys in the LSM and reads every value from the value log through its pointer",
	Writes: "writes each value once to its value log and a key with a value pointer to its LSM, whose memtable WAL and value log are " +
		"preallocated, memory-mapped files",
	WriteAmp: 1.1,
	Stalls:   "value log file rotations and memtable flushes",
	CPU:      "encoding a key and a value for the LSM, its value log writes and background compactions",
	Memory:   "its memtables, and its memory-mapped files, which count as resident when touched",
	Recovery: "replays its memtable WAL, and the engine first fsyncs the store's files",
	IntervalLoss: "keeps appended batches on an in-memory pending list that its flusher commits to Badger once per interval: " +
		"a killed process takes the list with it",
}
