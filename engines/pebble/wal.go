package pebble

import (
	"io"
	"os"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// walSuffix ends the name of every pebble WAL file (NNNNNN.log).
const walSuffix = ".log"

// isWAL reports whether name is one of pebble's write-ahead logs.
func isWAL(fs vfs.FS, name string) bool { return strings.HasSuffix(fs.PathBase(name), walSuffix) }

// voidFile is the file storeFS hands pebble when it cannot create a WAL after
// the disk froze, and every file it creates once the store is abandoned:
// every write and sync succeeds and nothing is kept. Pebble never reads a WAL
// it is writing (only Open replays WALs, from the disk); an abandoned store
// is only ever closed.
type voidFile struct{}

var _ vfs.File = voidFile{}

func (voidFile) Close() error                           { return nil }
func (voidFile) Read([]byte) (int, error)               { return 0, io.EOF }
func (voidFile) ReadAt([]byte, int64) (int, error)      { return 0, io.EOF }
func (voidFile) Write(p []byte) (int, error)            { return len(p), nil }
func (voidFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (voidFile) Preallocate(int64, int64) error         { return nil }
func (voidFile) Stat() (vfs.FileInfo, error)            { return voidInfo{}, nil }
func (voidFile) Sync() error                            { return nil }
func (voidFile) SyncTo(int64) (bool, error)             { return true, nil }
func (voidFile) SyncData() error                        { return nil }
func (voidFile) Prefetch(int64, int64) error            { return nil }
func (voidFile) Fd() uintptr                            { return vfs.InvalidFd }

// voidInfo describes a voidFile: an empty file.
type voidInfo struct{}

func (voidInfo) Name() string           { return "void" + walSuffix }
func (voidInfo) Size() int64            { return 0 }
func (voidInfo) Mode() os.FileMode      { return 0o644 }
func (voidInfo) ModTime() time.Time     { return time.Time{} }
func (voidInfo) IsDir() bool            { return false }
func (voidInfo) Sys() any               { return nil }
func (voidInfo) DeviceID() vfs.DeviceID { return vfs.DeviceID{} }
