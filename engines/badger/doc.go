// Package badger is a LogEngine over Badger (github.com/dgraph-io/badger/v4),
// the LSM that keeps values apart from keys in a value log, in dir/db
// beside the engine marker: a Store holds every partition log of a data
// directory in one database, and Open one log alone in a database of its
// own (the controller quorum's raft log, and every partition's before
// stores).
//
// # Design
//
// Each batch is one key-value pair: the key is the log's prefix (none for a
// log alone; 'l' and the log's id for a log of a store), a byte and the
// batch's base offset, big-endian, so each log is one key range and its
// keys sort in log order; the value is a CRC-32C,
// the record count and the batch bytes (the layout is engines/kvlog's, shared
// with the pebble engine), checked on every
// read so that no corrupt batch is ever returned. One key holds the log start
// offset (written by DeleteBefore), one more exists only while a Truncate is
// under way (cutKey).
//
// Badger syncs once per transaction (SyncWrites: the value log, then the
// memtable's WAL), so a writer committing its own batch pays two fsyncs, and
// 256 of them barely beat one. The engine therefore has its own group
// commit, one per database. Append puts the batch, already encoded and
// numbered, on its log's in-memory pending list: it is readable at once
// (Read serves offsets at or above the committed end from that list, those
// below from Badger) and Append never waits for the disk. One flusher
// goroutine takes everything pending in every log of the database (and the
// store's own writes: creations, deletions), commits it in one transaction
// (more only if it exceeds Badger's transaction limit), and so makes it all
// durable with one pair of fsyncs; every Sync waiter it covers, of any log,
// is released together, and what was appended meanwhile goes in the next
// round. A Sync waits for a round that covers every append numbered before
// it, whichever log's (SharedCommit); a log busy committing on its own (a
// Truncate, a DeleteBefore, its Close) sits a round out, and that round
// covers nothing from its first pending append on. Under SyncAlways every
// Append wakes the flusher; under SyncInterval the clock does too, every
// interval; under SyncNever only Close and a log's pending list growing
// past pendingFlushBytes do; under every policy a Sync does. SyncWrites
// stays on under every policy: a commit that is not synced could let a
// later, synced one reach the disk before it, which would leave holes after
// a power loss, not just a shorter log. So Badger has no state between "in
// this process's memory" and "durable", and a Sync under SyncInterval or
// SyncNever, which promises that a process crash loses nothing it covered,
// waits for a synced commit as under SyncAlways: the policies differ here
// only in what wakes the flusher when nobody waits.
//
// Badger logs some failures instead of returning them: a failed value log
// fsync inside a commit ("Error while curlf sync"), and, when it opens, an
// sstable that fails its checksum, which it then ignores ("Ignoring table").
// The engine's logger turns every Errorf into the database's sticky error,
// for every log in it (and an Open error: a checksum failure is
// ErrCorrupt), so a commit whose fsync failed is never acknowledged and a
// damaged store is not served with holes.
//
// Truncate writes cutKey, deletes the batch keys above the cut newest first,
// and deletes cutKey, in as many synced transactions as it takes; Open
// finishes a Truncate a crash interrupted. DeleteBefore commits what is
// pending, then writes the new start and deletes the keys below it; keys a
// crash left below the start are deleted at the next Open.
//
// Before Badger opens a store, the engine fsyncs its files (and deletes the
// empty log files a process killed inside Badger's Open leaves, which Badger
// cannot open): what a killed process wrote reaches the disk before Badger
// recovers it, so everything recovered counts as durable at once.
//
// # Amplification
//
// Batches of valueThreshold bytes or more (nearly all of them) go to the
// value log, written once, sequentially; the LSM holds only keys and value
// pointers (about 30 bytes a batch), so its flushes and compactions rewrite
// little and write amplification stays near 1 plus the pointers. Smaller
// batches live in the LSM itself: written to the memtable WAL, flushed, and
// rewritten by compactions (about 3 to 10 times). Deleting is where Badger
// costs: it has no range deletion, so DeleteBefore and Truncate write one
// tombstone per batch, and value log space comes back only when a value log
// file is mostly garbage and garbage collection (RunValueLogGC, run every
// gcInterval by the engine's clock) rewrites what is live in it and drops it;
// the discard statistics GC relies on are updated by LSM compactions, so
// space lags retention by up to a value log file (valueLogFileBytes) plus a
// compaction cycle.
//
// # Tuning
//
// Badger's defaults (64 MiB memtables, 5 of them, a 256 MiB block cache, 1 GiB
// value log files, 4 compactors) cost hundreds of MiB per DB; the broker opens
// one per data directory, and the controller quorum one more. Here: 32 MiB
// memtables, at most 3 (so at most 96 MiB of skiplists a DB), no compression (values in the value log are never
// compressed anyway, and Kafka batches usually are already) and so no block
// cache (tables are read through mmap and the page cache), index cache off
// (table indexes stay in memory; they are small, the LSM holding pointers),
// 64 MiB value log files (or twice MaxBatchBytes), the minimum 2 compactors,
// conflict detection and metrics off, and Badger's messages routed to
// Options.Logger. valueThreshold is 256 bytes: a value pointer and a second
// read are not worth it for a batch smaller than that, and everything larger
// stays out of the LSM's compactions.
//
// Capabilities: Durable, not CustomFS (Badger does its own file I/O through
// the OS and mmap); engine.Open refuses a custom filesystem for it.
//
// # Power loss
//
// Not being CustomFS, the engine is skipped by crashtest's PowerLoss; it
// has power-loss coverage instead through a FUSE layer (engine/powerfs),
// in TestPowerLossFUSE: crashtest's PowerLoss workload runs with the engine
// in a child process on a powerfs mount, the power goes out at the k-th
// operation that changes the disk (a write, including the kernel's
// writeback of mmapped pages, a change of size, an fsync of a file or a
// directory, a create, rename or unlink), every file goes back to its last
// fsync and every name not yet durable is undone, keeping a share of the
// unsynced changes, oldest first, the child is killed, and the log is
// reopened from what survived and checked by crashtest's rules. Names are
// durable at any fsync there, as on ext4 and XFS, whose fsync commits the
// journal they are in. What this covers: an acknowledgement given before
// the value log and memtable WAL were fsynced, a torn or unsynced tail
// that Badger or the engine fails to cut, a Truncate or DeleteBefore that
// does not stick, and a power loss at any point of Open and Close.
//
// Under POSIX's stricter rule (a name is durable only once its directory
// is fsynced; TestPowerLossFUSEPOSIXNames, skipped) two losses showed up.
// Badger's Open creates its directory, first value log and discard file
// without fsyncing a directory, which could take the whole database; the
// engine fsyncs both directories after Open. And a memtable flush records
// its new table in the fsynced manifest before the directory naming the
// table is fsynced, so a power loss in between makes the database fail to
// open ("file does not exist for table"); that one is Badger's and is not
// worked around.
//
// What it does not cover: unlinks and replacing renames are durable at
// once in that model; torn sectors within one write, writes reordered
// within a file, a second crash during recovery, and Badger's background
// work beyond what this short workload starts (value log rotation and GC,
// compactions).
package badger
