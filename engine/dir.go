package engine

import (
	"bytes"
	"fmt"
	"io"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// MarkerFile names the file, in every engine's directory, that says which
// engine wrote it.
const MarkerFile = "ENGINE"

// ClaimDir creates dir if needed and makes sure it belongs to the engine
// called name: an empty directory (or one holding only the temporary marker
// of a claim cut short by a crash) is claimed by writing the marker durably,
// directory entry included; a directory claimed by another engine, or
// holding other files but no marker, returns ErrWrongEngine. Every engine
// calls it first in Open.
func ClaimDir(fs vfs.FS, dir, name string) error {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("engine %s: create %s: %w", name, dir, err)
	}
	path := fs.PathJoin(dir, MarkerFile)
	f, err := fs.Open(path)
	switch {
	case err == nil:
		defer f.Close()
		got, err := io.ReadAll(f)
		if err != nil {
			return fmt.Errorf("engine %s: read %s: %w", name, path, err)
		}
		if owner := string(bytes.TrimSpace(got)); owner != name {
			return fmt.Errorf("%w: %s was written by engine %q, not %q", ErrWrongEngine, dir, owner, name)
		}
		return nil
	case !oserror.IsNotExist(err):
		return fmt.Errorf("engine %s: open %s: %w", name, path, err)
	}
	entries, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("engine %s: list %s: %w", name, dir, err)
	}
	for _, e := range entries {
		// The temporary marker of a claim that crashed before its rename is
		// ours to replace: the directory was empty when that claim began.
		if e != MarkerFile+tmpSuffix {
			return fmt.Errorf("%w: %s holds files but no %s marker (another program's directory?)", ErrWrongEngine, dir, MarkerFile)
		}
	}
	// A directory just created is durable only once its parent is synced;
	// without this a power loss can take the whole log with it, synced
	// batches included.
	if err := SyncDir(fs, fs.PathDir(dir)); err != nil {
		return fmt.Errorf("engine %s: %w", name, err)
	}
	return WriteFileAtomic(fs, path, []byte(name+"\n"))
}

// ReadFileIfExists returns the contents of the (small) file at path, and
// false with no error when there is none.
func ReadFileIfExists(fs vfs.FS, path string) ([]byte, bool, error) {
	f, err := fs.Open(path)
	if oserror.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	return b, true, nil
}

// tmpSuffix names WriteFileAtomic's temporary file.
const tmpSuffix = ".tmp"

// WriteFileAtomic replaces path with data so that after a crash the file holds
// either its old contents or the new ones, never a mix: write a temporary
// file, fsync it, rename it over path, fsync the directory.
func WriteFileAtomic(fs vfs.FS, path string, data []byte) error {
	if err := StageFile(fs, path, data); err != nil {
		return err
	}
	if err := PlaceStaged(fs, path); err != nil {
		return err
	}
	return SyncDir(fs, fs.PathDir(path))
}

// StageFile is the first half of WriteFileAtomic, for a caller with other
// work to do before the file takes its place: data written to path's
// temporary file and synced.
func StageFile(fs vfs.FS, path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	return nil
}

// PlaceStaged is the second half: the file StageFile wrote renamed over
// path. The rename is durable once the caller has synced path's directory.
func PlaceStaged(fs vfs.FS, path string) error {
	tmp := path + tmpSuffix
	if err := fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// SyncDir fsyncs a directory so that entries created, renamed or removed in it
// survive a crash.
func SyncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return d.Close()
}
