package pebble

import (
	"fmt"

	"github.com/cockroachdb/errors/oserror"
	pebbledb "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/atomicfs"
)

// prepareStore readies the store in path for pebble.Open and reports
// whether the engine must rotate to a new WAL before it writes anything.
//
// Pebble creates a new store at its oldest format version and ratchets it
// to Options.FormatMajorVersion at the end of Open, a marker move (and its
// fsyncs) per version, after it has created the first WAL in the old
// recyclable chunk format. After a power loss pebble's reader takes zeros
// at the end of a WAL block for the newer format's padding and skips on,
// leaving a hole in the recovered log (TestRecoveredLogHasNoHole); in the
// WAL sync chunk format (FormatWALSyncChunks) a lost block ends the replay,
// so what is recovered is a prefix.
//
// So for a store that does not exist yet prepareStore places the
// format-version marker itself, through pebble's own atomic marker, at the
// version the engine asks for: pebble then creates the store at that version
// directly, first WAL included, and nothing needs rotating. A crash before
// pebble's MANIFEST exists leaves a directory that is still a store yet to
// be created, at that version. A store that exists at a format older than
// FormatWALSyncChunks (or that cannot be read: any doubt counts) is
// rotated once pebble has opened it, at the cost of one empty flush.
func prepareStore(fs vfs.FS, path string, version pebbledb.FormatMajorVersion) (rotate bool, err error) {
	desc, err := pebbledb.Peek(path, fs)
	if err != nil {
		return true, nil // pebble.Open reports what is wrong
	}
	if desc.Exists || desc.FormatMajorVersion != pebbledb.FormatDefault {
		return desc.FormatMajorVersion < pebbledb.FormatWALSyncChunks, nil
	}
	m, _, err := atomicfs.LocateMarker(fs, path, formatVersionMarker)
	if err != nil {
		return false, fmt.Errorf("format version marker: %w", err)
	}
	defer m.Close()
	if err := m.Move(version.String()); err != nil {
		return false, fmt.Errorf("format version marker: %w", err)
	}
	return version < pebbledb.FormatWALSyncChunks, nil
}

// makeStoreDir creates the store's directory if it is missing. Its entry
// is left unsynced: pebble.Open syncs it, and until then the directory
// holds nothing a crash could take from anyone (a store lost before its
// Open returned is created again by the next one).
func makeStoreDir(fs vfs.FS, path string) error {
	if _, err := fs.Stat(path); !oserror.IsNotExist(err) {
		return err
	}
	return fs.MkdirAll(path, 0o755)
}

// formatVersionMarker is the name pebble gives its format-version marker
// (marker.format-version.<iteration>.<version> on disk, the version as
// FormatMajorVersion.String writes it, which pebble promises never to change).
const formatVersionMarker = "format-version"

// openStore opens the pebble DB and gives up as soon as a disk write fails
// under it. Pebble's Open would return some of those failures, but when the
// flush of a recovered WAL fails it retries forever and never returns, and
// when it fails late it leaves goroutines behind; so pebble.Open never sees a
// failed change: the first one abandons the store (it and every later change
// succeed without reaching the disk, see storeFS), openStore returns the
// failure at once, and the DB pebble then hands over is closed and dropped.
// A panic out of pebble.Open is an error too.
func openStore(path string, o *pebbledb.Options) (*pebbledb.DB, error) {
	fs := o.FS.(*storeFS)
	type result struct {
		db  *pebbledb.DB
		err error
	}
	opened := make(chan result, 1)
	fs.startOpening()
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("pebble panicked: %v", p)}
			}
			opened <- r
		}()
		r.db, r.err = pebbledb.Open(path, o)
	}()
	select {
	case r := <-opened:
		if err := fs.endOpening(); err != nil && r.err == nil {
			// A change failed, and pebble was told it succeeded.
			closeQuietly(r.db)
			return nil, err
		}
		return r.db, r.err
	case <-fs.failedCh: // the store is abandoned: pebble.Open will return
		go func() {
			if r := <-opened; r.db != nil {
				closeQuietly(r.db)
			}
		}()
		return nil, fs.err()
	}
}

// closeQuietly closes a DB the engine gives up on; its error, or panic,
// changes nothing.
func closeQuietly(db *pebbledb.DB) {
	defer func() { _ = recover() }()
	_ = db.Close()
}
