package pebble

import "github.com/minikafka/minikafka/engine"

// notes describe this design for the benchmark reports (see engine.Notes).
var notes = engine.Notes{
	WritePath: "commits each batch to the memtable and write-ahead log it shares with every partition of the broker (one database per data directory) without syncing; the group commit then issues one WAL sync " +
		"for all waiting batches, and memtables are later flushed to sstables: every byte is written twice before any compaction",
	CommitCost: "one WAL sync per round",
	ReadPath:   "iterates sstables block by block (32 KiB blocks) and checks each batch's CRC, returning a new buffer per Read",
	Writes: "writes each batch to its WAL and again into an sstable when a memtable (32 MiB, one for every partition of the broker) flushes, and compactions may " +
		"rewrite it, so writes reach 2 or more once memtables flush; a phase of a few seconds may end before most of them do, and its disk " +
		"holds WAL files not yet recycled beside the sstables",
	WriteAmp:     2.5,
	Stalls:       "memtable flushes and compactions competing with WAL syncs",
	CPU:          "encoding a key and a value for the LSM, and its background flushes and compactions",
	Memory:       "its memtables and block cache",
	Recovery:     "replays its WAL into memtables and flushes them to sstables before its Open returns",
	IntervalLoss: "commits without syncing and its WAL writer hands the log to the kernel in the background: a kill can catch records still in its buffer",
}
