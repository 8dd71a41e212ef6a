// Package segment is mini-kafka's native storage engine: an append-only log
// cut into segment files of CRC-framed batches, each with a sparse offset
// index, written through one lock and made durable by one flusher goroutine
// (group commit). All I/O goes through Options.FS (pebble's vfs.FS), so the
// engine runs unchanged on pebble's crashable in-memory filesystem.
//
// # Directory
//
//	ENGINE                        engine.ClaimDir's marker: "segment" (none in a
//	                              log of a store: the store's marker speaks for it)
//	00000000000000000000.log      a segment: frames from base offset 0
//	00000000000000000000.index    its sparse index
//	00000000000000001234.log      the next segment starts at offset 1234 ...
//	00000000000000001234.ckpt     the active segment's checkpoints
//	log-start                     the log start offset (after DeleteBefore)
//	00000000000000000000.log.deleted  a segment DeleteBefore dropped, not yet deleted
//	spare.segment                 a dropped segment's file, kept to be the next segment
//	clean-shutdown                present only after a clean Close
//
// Names are the segment's base offset, 20 digits, so they sort in offset
// order. The last segment is the active one; all others are sealed and
// never written again. A sealed segment's frames end exactly where the next
// segment begins (any bytes after them are dead, see Truncate).
// No file is ever shortened, and no byte of the log is ever overwritten:
// vfs.FS has no truncate, and an immutable prefix is what lets readers go
// without locks. The one file written over is the spare, whose bytes left
// the log before it became the spare (see Recycling).
//
// # Segment file
//
// An 8-byte file header, then frames back to back. Integers are
// little-endian.
//
//	+--------+---------+-----------+-----------+-----
//	| "MKSG" | version |  frame 0  |  frame 1  | ...
//	|   4    |  4 (=1) |           |           |
//	+--------+---------+-----------+-----------+-----
//
// A frame holds one batch: a 20-byte header and the batch's bytes as given
// to Append.
//
//	+---------+---------+-------------+---------+------------------+
//	|   CRC   | length  | base offset | records |   data (length)  |
//	| 4 bytes | 4 bytes |   8 bytes   | 4 bytes |                  |
//	+---------+---------+-------------+---------+------------------+
//
// CRC is the CRC-32C (Castagnoli) of the 16 header bytes after it followed
// by the data, so a flipped bit anywhere in a frame, header included, is
// caught. length and records are at least 1; base offset is the previous
// frame's base offset plus its records (the segment's base for the first),
// which a reader checks too: a reader led astray (by a damaged length, say)
// finds out at the next header instead of returning some other batch.
//
// What follows the last frame tells how the segment ends. After a crash,
// recovery reads the 20 bytes where the next header would be:
//
//   - nothing (the file ends): every byte written is a frame;
//   - 20 zero bytes: a zeroed tail, blocks the filesystem allocated but
//     whose data never reached the disk (a header is never all zeros: its
//     length is at least 1);
//   - an old frame of a recycled file: a valid header whose base offset is
//     below the segment's base (see Recycling);
//   - anything else: a torn frame, a write the crash cut short.
//
// Only the first ends the segment where it can take more frames; after any
// other, recovery seals it there and starts the next segment (see Recovery),
// since the bytes after the end may hold unacknowledged frames that a later
// frame could line up with.
//
// A segment rolls (a new file at the next offset) when the next frame would
// take it past Options.SegmentBytes (clamped to [1 KiB, 1 GiB]); a frame
// larger than that goes alone into a fresh segment. A segment also rolls
// before its offsets outgrow the index's 4-byte relative offset. Batches are
// limited to 1 GiB whatever Options.MaxBatchBytes says (ErrBatchTooLarge),
// so every frame length and indexed position fits its 4 bytes.
//
// # Index file
//
// One 8-byte entry per indexed frame, for the segment's first frame and
// then the first frame starting at least 4 KiB after the previous entry:
// about 0.2% of the log. A read binary-searches the entries for the greatest
// base offset not above the wanted offset and reads forward from there, so
// it scans at most 4 KiB plus one frame before what it wants, whatever the
// segment's size.
//
//	+--------+---------+-------+-------+------+-----+--------+---------------------+-----+
//	| "MKIX" | version | flags | count | base | end | endPos | count × (rel, pos)  | CRC |
//	|   4    |    4    |   4   |   4   |  8   |  8  |   8    |   count × (4 + 4)   |  4  |
//	+--------+---------+-------+-------+------+-----+--------+---------------------+-----+
//
// rel is the frame's base offset minus the segment's base, pos its byte
// position in the segment file; end is the offset just past the segment's
// last frame and endPos the byte just past it; CRC is the CRC-32C of all
// that precedes it. Flag 1, sealed, says the segment takes no more frames:
// its end is authoritative and any bytes past endPos are dead (the tail cut
// by Truncate or by recovery). An index without the flag is the active
// segment's snapshot written by Close, trusted only with the clean-shutdown
// marker. An index that ends a segment early (a cut) and the snapshot are
// written with engine.WriteFileAtomic; the index of a segment sealed whole
// (a roll) is written after the segment's data is durable, through a
// temporary file and a rename but with no fsync: it is a shortcut, and if a
// crash loses or tears it, its checksum fails and the segment is scanned.
//
// # Checkpoint file
//
// The active segment's index so far, appended to by the flusher each time a
// round has made another checkpoint interval of the segment durable (1/32 of
// Options.SegmentBytes, at most 8 MiB), after the round's waiters are
// released, and never synced: a record is appended only once the data it
// describes is durable, so a record on disk is true whenever it got there,
// and the kernel writes it back on its own (a kill -9 loses none; a power
// loss those not yet written back, up to the whole file).
//
//	+--------+---------+------+----------+----------+----------+-----
//	| "MKCP" | version | base | record 0 | record 1 | record 2 | ...
//	|   4    |  4 (=1) |  8   |          |          |          |
//	+--------+---------+------+----------+----------+----------+-----
//
//	+-------+-----+--------+---------------------+-----+
//	| count | end | endPos | count × (rel, pos)  | CRC |
//	|   4   |  8  |   8    |   count × (4 + 4)   |  4  |
//	+-------+-----+--------+---------------------+-----+
//
// A record adds the index entries below its endPos that the records before
// it did not have, and moves the extent (end, endPos) forward. Its CRC is
// the CRC-32C of its bytes before the CRC, seeded with the CRC of the record
// before it (of the 16-byte header for the first), so records count only in
// order: a reader stops at the first that is torn, lost (zeros), out of order
// or inconsistent, and takes the extent of the last good one. The first
// checkpoint a process makes of a segment replaces the file with a fresh one
// holding every entry; a segment sealed with its index (a roll, a cut) has
// its checkpoint removed, and a removed segment takes it along.
//
// # Small files
//
//	log-start:       "MKST" | version u32 | start offset i64 | CRC u32
//	clean-shutdown:  "MKCL" | version u32 | active base i64 | end i64 | CRC u32
//
// Both are written with engine.WriteFileAtomic; the CRC covers what precedes
// it. Without log-start the log starts at the first segment's base.
//
// These format constants never change once written; a change is a new
// version number.
//
// # Writing and group commit
//
// Append checks the batch and encodes its frame straight into the active
// segment's in-memory tail, under the append lock, then publishes the new
// end (segment byte end, then log end), so a reader that sees an offset also
// sees its bytes. It makes no system call and does not wait for the disk:
// a write per Append under the lock would serialise the appenders on the
// kernel, where a buffered tail lets one flusher write for all of them.
//
// One flusher goroutine moves data to the disk. Sync(end) joins the next
// round and kicks the flusher. A round first takes the waiters that joined,
// then, under the append lock, the log end and the list of segments rolled
// since the last round; outside the lock it writes each rolled segment's
// tail and fdatasyncs it, syncs the directory if an entry changed (a segment
// created, the clean-shutdown marker removed), writes the active segment's
// tail with one WriteAt and fdatasyncs it; then it releases every waiter of
// the round, and finally writes the rolled segments' sealed indexes. Each
// waiter asked for an end already appended before the round began, so that
// one write and one fsync cover all of them; waiters arriving while it runs
// form the next round, and appenders keep appending meanwhile. A sealed
// segment is synced before, or in the same round as, the segment after it,
// so no Sync returns before batches on the far side of a roll are durable.
// The first I/O error is sticky: later Appends, Syncs, Truncates and
// DeleteBefores return it. Only the flusher, or Truncate and Close while it
// is parked, write or sync segment data, so a file never sees two writes, or
// a write and a sync, at once (as vfs.File asks).
//
// An Append that leaves 64 KiB or more unwritten kicks the flusher to write
// it (write-behind), whatever the policy. Under SyncInterval and SyncNever
// every Append kicks it, so appended data reaches the OS at once while the
// writes still batch whatever accumulated, and a Sync waits only for the
// round that writes its frames (a process crash then loses nothing it
// covered; a power loss what was not synced). Such a round also asks the
// kernel to start writing back what it wrote (sync_file_range WRITE, on
// Linux), so that an interval's fdatasync, which the next write round and
// its waiters queue behind, has little left to do. Under SyncInterval the
// flusher also syncs every Options.SyncInterval of Options.Clock; under
// SyncNever Close syncs. Under every
// policy a rolled segment is fsynced once by the flusher (one fsync per
// SegmentBytes), so that its sealed index, written after, can be trusted
// and recovery scans only the active segment. A round that has synced
// another checkpoint interval of the active segment since its last
// checkpoint appends a checkpoint record, last of all.
//
// Opened with Options.Inline (the simulator's way, which runs every broker
// on one goroutine), there is no flusher: every Append runs, on the
// caller's goroutine, the round a kicked flusher would (the frame written
// to the file unsynced, a sealed segment synced), a Sync under SyncAlways
// runs a syncing round, and under SyncInterval the caller runs the
// interval's rounds with Flush. What a power loss finds in the files is
// then what it could find behind the flusher.
//
// # Reading
//
// Read finds the segment by base offset, looks up its index and reads with
// one ReadAt as large as the byte budget (plus the bytes it may skip and the
// header after the last frame that fits, which tells it to stop), up to
// 8 MiB, ending where an indexed frame starts (in a scan of batches larger
// than the index interval, exactly where the next read begins, so the kernel
// sees one stream); a batch larger than that gets a read of its own. Bytes of the active segment not yet written
// are copied from its in-memory tail instead. A bad frame returns
// engine.ErrCorrupt (with the segment and byte position) and no data, or,
// when good batches came before it, ends the read with them (the next read,
// starting at the bad one, reports it).
//
// Which frames a read checks. The broker stores Kafka batches, which carry
// their own CRC-32C over everything but their first 21 bytes, verified when
// a batch enters a leader and again when a follower receives it (and by
// consumers that check CRCs, as Java's does by default): so a read does not
// compute the frame CRC over bytes whose batch CRC the receiver checks
// anyway, except where the bytes are not known good. Every frame a read
// serves has its header checked (length, records, the expected base
// offset) and must be followed by a header carrying the base offset it says
// comes next, or end the segment: a damaged length or record count cannot
// pass for a batch, and when that check fails the frame's CRC decides
// whether the frame or the one after it is bad. Beyond that:
//
//   - frames this process framed (every segment begun since Open, and the
//     active segment past its extent at Open) are served without the CRC
//     check: their CRC was computed from bytes in memory, and the broker
//     had verified the batch CRC over the same bytes;
//   - frames a scan in this process checked (recovery after a crash, the
//     rebuild of a missing index) are trusted too;
//   - every other frame, data from before Open, has its CRC checked by
//     each read that serves it until one finds it good; the first frame
//     not yet checked moves forward as reads in order pass it, so data read
//     from the start is checked once (a read starting elsewhere checks
//     again what it serves, as before).
//
// The frame CRC is still computed on write, over the bytes being copied
// into the tail, though the broker has just verified the batch CRC over
// most of them. A frame CRC over the header and the batch's own CRC field
// alone would make torn frames ambiguous: a frame whose header reached the
// disk but whose body did not (zeros, or a recycled file's old bytes)
// would pass recovery, which cannot check the batch CRC without parsing
// Kafka bytes. Deriving the full frame CRC from the batch CRC (CRC
// combination) keeps the format but costs O(log n) GF(2) products per
// frame, while CRC-32C here runs at 16 to 23 GB/s (60 ns for 1 KiB): no
// saving worth a second way to compute a format constant.
//
// Recovery (Open, below) still checks every frame it scans, so a torn or
// unsynced tail is cut as before. What is given up is detecting, in the
// engine, a disk that silently corrupts a block after this process wrote
// or checked it and the page cache let it go: such bytes are served under
// their right base offset and record count, and the batch CRC fails at the
// receiver (a follower refuses the batch; a consumer that checks CRCs
// reports it). Kafka itself checks no CRC on reads.
// Returned Data slices share one fresh buffer per read, capped so that
// appending to one cannot touch another. ReadInto does the same into a
// buffer the caller lends and gets back, for callers that reuse memory (a
// fresh buffer per read, not the disk or the CRC, is what a cold scan mostly
// pays for in a small heap). A read continues into the next segment while
// its budget lasts. Readers hold a reference on the segment, not the append
// lock: a segment removed meanwhile stays open until its last reader leaves.
//
// A reader that goes through a segment in order, 16 MiB or more from the
// end of what is written, asks the kernel to read the next 16 MiB ahead of
// it (posix_fadvise WILLNEED, renewed every 4 MiB it advances; see
// readahead.go). The kernel's own readahead keeps about one request at the
// device for one stream of reads, and a cold scan then gets a fraction of
// what a device serving several requests at once can give (a cold GiB read
// 2-4x faster here). Nothing is buffered in the process: what is read ahead
// is page cache. Reads near the end (a caught-up consumer's) ask for
// nothing, and an in-memory FS is never asked.
//
// # Truncate and DeleteBefore
//
// Truncate(offset) finds the batch boundary at or below offset, syncs what
// is kept, removes the later segments newest first, seals the segment
// holding the cut with a sealed index ending there (its remaining bytes are
// dead), and starts a new, synced, empty active segment at the cut. A crash
// part way leaves a prefix of the old log at least as long as the cut; once
// Truncate returns, the cut holds. A cut at or below the log start empties
// the log at the start.
//
// DeleteBefore(offset) writes log-start first, then removes, oldest first,
// the sealed segments that end at or below it. An offset past the end
// writes log-start, removes every segment and starts an empty one there.
//
// Removing a segment removes its log file, syncs the directory, then
// removes its index, so that a crash never leaves a segment file without
// the sealed index that bounds it. DeleteBefore renames the log file to
// .log.deleted instead, under the engine's locks, and deletes it after
// releasing them (through Options.Discard when set, which the broker
// paces): unlinking a large file can take tens of milliseconds, and
// appends would wait for it. Open removes any .deleted file left by a crash. The
// first of them to be free of readers while the log has no spare becomes
// the spare instead, if it is at least half of SegmentBytes.
//
// # Recycling
//
// The next segment the log starts (a roll, or the new segment of a Truncate
// or a recovery) is the spare renamed, when there is one: its blocks were
// written before, so the fdatasyncs that follow overwrite them and journal
// no change of size or extents, which makes them cheaper than an appending
// file's (fallocate's unwritten extents journal their conversion as an
// append does, and zeroing a file first writes it twice, so neither is
// used). The
// file header is written over the old one and frames follow it over the old
// frames. None of those can be taken for a frame of the new segment: a
// frame's base offset must be where the frame before it ends, and every old
// frame's is below the log start at the time its segment was dropped, so
// below the base of any segment started since (the log start never moves
// back; segments a Truncate drops, whose offsets come again, are deleted,
// never kept). A log keeps at most one spare, so retention's steady state
// holds one more segment file than the log needs, and a log never trimmed
// has none.
//
// # Recovery (Open)
//
// After a clean Close, Open reads the clean-shutdown marker, the active
// segment's snapshot index and the active file's length; when the three
// agree (the file at least as long as the index says: a recycled file is
// longer) it reads no segment data at all. Sealed segments are trusted: each
// one's index is loaded on its first read. The marker is removed (and the
// directory synced before any later Sync returns) by the first change.
//
// Otherwise (a crash), Open:
//
//  1. removes leftovers: temporary files of atomic writes, segments set
//     aside for deletion, and index files whose segment is gone;
//  2. removes sealed segments wholly below the log start (an interrupted
//     DeleteBefore);
//  3. goes back from the last segment over those without a sealed index
//     (the active segment, and one rolled just before the crash whose index
//     was not written yet) to the first with a sealed index; that one's end
//     is authoritative, and segments before it are trusted;
//  4. scans the segments it passed over, oldest first, checking every
//     frame's CRC, each up to the next segment's base (the last to the end
//     of its frames); sealed ones found whole get their index written. A
//     segment with a checkpoint is scanned from its last good record, once
//     the frames from that record's last index entry are found to end
//     exactly at its extent (otherwise from its start): so recovery reads
//     at most a checkpoint interval and a flush round of the active
//     segment, whatever its size;
//  5. ends the log at the first torn point: where a scan stops short (a
//     torn, zeroed or unsynced tail, or a recycled file's old frames; see
//     Segment file), or where an authoritative end falls short of
//     the next segment (an interrupted Truncate). That segment is sealed
//     there with a sealed index, every later segment removed, and a new
//     active segment started at the end: the torn bytes stay behind, dead.
//     A segment with no good frame is removed and replaced by an empty one;
//  6. syncs the active segment, so what recovery found is durable (an
//     active segment with no frame has nothing to make durable), and
//     restarts the log at log-start if its end is below it.
//
// A log's first segment (of a new log, or of one that recovery found with
// none) is created with its directory entry synced but its file header
// not: no segment after it can become durable before it, and until a round
// syncs it the log holds nothing acknowledged, so a header a crash tore is
// a segment with no good frame, replaced by an empty one.
//
// A sealed segment whose index is missing or bad is rebuilt on first read by
// scanning it up to the next segment's base (never further); a flipped byte
// in it is reported as engine.ErrCorrupt by the read that meets it, and the
// segments after it stay readable.
package segment
