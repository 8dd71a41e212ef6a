package segment

import "github.com/minikafka/minikafka/engine"

// notes describe this design for the benchmark reports (see engine.Notes).
var notes = engine.Notes{
	WritePath: "appends each batch to one sequential file per partition: the append copies it into the active segment's in-memory tail, " +
		"and one flusher writes everything pending with one write and one fdatasync per round, however many producers wait on it",
	CommitCost: "one fdatasync of the active segment per round",
	ReadPath:   "reads its files sequentially with large reads from an index lookup, into a lent buffer (engine.BufferReader)",
	Writes: "writes each batch once into its segment file, plus a 20-byte frame header per batch and a sparse index of about 0.2 %, " +
		"so both figures should sit near 1",
	WriteAmp: 1.05,
	Stalls:   "segment rolls and slow fdatasyncs",
	CPU:      "a copy into the segment's buffer and a CRC per batch",
	Memory:   "each partition's unwritten tail and sparse index",
	Recovery: "finds no clean-shutdown marker and checks the frames written since the active segment's last checkpoint " +
		"(at most 8 MiB and a flush round), every CRC up to the torn tail",
	IntervalLoss: "kicks its flusher to hand every append to the kernel at once under this policy, but the acknowledgement does not " +
		"wait for it: a kill can catch appends the flusher had not written yet",
}
