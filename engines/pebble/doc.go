// Package pebble is a LogEngine over the Pebble LSM
// (github.com/cockroachdb/pebble/v2), in dir/db beside the engine marker:
// a Store holds every partition log of a data directory in one database,
// as an LSM is built to (CockroachDB runs one pebble per store, not per
// range), and Open holds one log alone in a database of its own (the
// controller quorum's raft log, and every partition's before stores).
//
// # Design
//
// Each batch is one key-value pair: the key is the log's prefix (none for
// a log alone; 'l' and the log's id for a log of a store), a byte and the
// batch's base offset, big-endian, so each log is one key range and its
// keys sort in log order; the value is a CRC-32C, the record count and the
// batch bytes (the layout is engines/kvlog's, shared with the badger
// engine). The CRC is ours, checked on every read, so that
// "no corrupt batch is ever returned" holds the same way as for every other
// engine, whatever the store checks itself. One more key holds the log start
// offset, written only by DeleteBefore. Read(offset) seeks to the last key at
// or below offset and iterates forward (a hole in the keys would be
// ErrCorrupt, never served).
// On open, the start comes from its key (0 when absent) and the end from the
// last batch key (the start when there is none).
//
// Durability is Pebble's own WAL, one for every log of the database.
// Append commits without syncing (pebble.NoSync): the batch is in the
// memtable and readable, and in the WAL writer's current block, which
// Pebble hands to the OS only when the block fills or a sync asks for it
// (so a process crash can take it); the write is then numbered, in WAL
// order. A Sync therefore waits for a WAL sync under every policy, as it
// must to promise that a crash of the process spares what it covered;
// under SyncInterval a flusher also syncs every interval. Sync is a group
// commit over the whole database: one goroutine commits a WAL sync (an
// empty LogData record with pebble.Sync) covering every write numbered
// before it, whichever log it went to, and completes every waiter that
// arrived before it, while later waiters queue for the next one; so a Sync
// of any log makes every earlier append of the store durable in that one
// fsync (SharedCommit), and a broker's partitions share their fsyncs.
// Truncate (a range deletion) and DeleteBefore (a range deletion plus the
// new start, in one Pebble batch) commit with pebble.Sync, so they are
// durable when they return, and so is everything written before them. A
// store's Create and Delete are described at Store.
// What Open recovers counts as durable at once: pebble flushes what it
// replays from the WAL to synced sstables before its Open returns (a test
// checks it with a power loss right after a reopen).
//
// What Open recovers is also a prefix of what was appended, never a later
// batch without an earlier one, because every batch goes to a WAL in
// pebble's WAL sync chunk format. Left to itself, pebble writes a new store's
// first WAL in an older format whose replay, after a power loss, can skip one
// record and go on with the next (prepareStore says how); so Open creates a
// new store at the newest format from the start, and rotates a store found
// at an older format to a fresh WAL before any batch is written.
//
// # Failing and crashing disks
//
// Pebble is fail-stop: it calls its logger's Fatalf (which exits) when a WAL
// or MANIFEST write fails, panics when a directory sync fails or when it
// cannot close or create a WAL as it rotates to a new one (then with its
// mutexes in a state that ends the process whatever recovers the panic), and
// retries a failed flush forever. A broker serving many partitions cannot exit for one
// failed write, so the engine puts two layers under pebble:
//   - its logger records Fatalf instead of exiting (for a commit, pebble then
//     goes on as if the write had succeeded, so every write checks it);
//   - its filesystem (storeFS, fs.go) syncs a directory after creating a file
//     in it, so that pebble's MANIFEST is never lost behind the marker that
//     names it; freezes the disk at the first failed change, so that what
//     stays on disk is what a crash at that moment would leave; and reports
//     to pebble as successes the failures it cannot take (a failed directory
//     sync, any failure of a WAL, a failed close after the freeze), which the
//     freeze and the engine's check of the kept error make safe, rather than
//     let pebble panic in its own goroutines or with its mutexes in a state
//     that ends the process.
//
// The first failure from either becomes the database's sticky error, for
// every log in it (one WAL: a write that failed may be any log's): Append,
// Sync, Truncate and DeleteBefore return it from then on (no Sync succeeds
// after a failed one); Read still serves what pebble holds. Open gives up at
// the first failed change instead of waiting for a pebble.Open that may never
// return, and lets that pebble.Open run to its end on a disk where nothing
// changes any more, then closes what it returns. A panic out of pebble on the engine's
// own goroutines is an error too, after which pebble is not called again.
//
// # Amplification
//
// Every byte is written twice before any compaction: once to the WAL, once
// in the sstable the memtable flushes to. Keys only ever grow, so flushed
// sstables do not overlap each other and Pebble moves most of them down the
// levels without rewriting them; expect write amplification of about 2-3, not
// the 10+ of random keys. Range deletions (Truncate, DeleteBefore) are one
// small tombstone each; the space comes back when compactions drop the
// covered sstables, whole, as a "delete-only" compaction. So disk use lags
// retention by up to a memtable plus a compaction, and a deleted prefix may
// stay on disk until the next compaction touches it.
//
// # Tuning
//
// The broker runs one DB per data directory and the controller quorum one
// more, so the defaults are for a few DBs in one process:
//   - 32 MiB memtables, at most 4 queued (Pebble starts each DB at 256 KiB
//     and doubles, so the quorum's small log costs little); a 1 MiB batch
//     stays well under Pebble's large-batch threshold of half a memtable;
//   - one 32 MiB block cache and one 1024-entry sstable file cache shared by
//     every pebble DB in the process, instead of 8 MiB and up to 1000
//     open files per DB: consumers mostly read the tail, from the memtable;
//   - deleted sstables removed at Options.DeleteRate (512 MiB/s by
//     default, pebble's TargetByteDeletionRate), as the broker paces the
//     deletion of segment files;
//   - 32 KiB sstable blocks (default 4 KiB) and 8 MiB L0 files: the log is
//     read sequentially, never by point lookup, so no bloom filters either;
//   - the newest format version (WAL sync chunks tell a torn WAL tail from
//     corruption on replay, and never leave a hole; see above);
//   - Pebble's messages go to Options.Logger (Infof at debug level).
//
// Capabilities: CustomFS (all I/O goes through Options.FS, so the crash
// suite can run it on a crashable in-memory filesystem) and Durable.
package pebble
