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

// walVoid is the WAL storeFS hands pebble when it cannot create one after the
// disk froze: every write and sync succeeds and nothing is kept. Pebble never
// reads a WAL it is writing (only Open replays WALs, from the disk).
type walVoid struct{}

var _ vfs.File = walVoid{}

func (walVoid) Close() error                           { return nil }
func (walVoid) Read([]byte) (int, error)               { return 0, io.EOF }
func (walVoid) ReadAt([]byte, int64) (int, error)      { return 0, io.EOF }
func (walVoid) Write(p []byte) (int, error)            { return len(p), nil }
func (walVoid) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (walVoid) Preallocate(int64, int64) error         { return nil }
func (walVoid) Stat() (vfs.FileInfo, error)            { return walVoidInfo{}, nil }
func (walVoid) Sync() error                            { return nil }
func (walVoid) SyncTo(int64) (bool, error)             { return true, nil }
func (walVoid) SyncData() error                        { return nil }
func (walVoid) Prefetch(int64, int64) error            { return nil }
func (walVoid) Fd() uintptr                            { return vfs.InvalidFd }

// walVoidInfo describes a walVoid: an empty file.
type walVoidInfo struct{}

func (walVoidInfo) Name() string           { return "void" + walSuffix }
func (walVoidInfo) Size() int64            { return 0 }
func (walVoidInfo) Mode() os.FileMode      { return 0o644 }
func (walVoidInfo) ModTime() time.Time     { return time.Time{} }
func (walVoidInfo) IsDir() bool            { return false }
func (walVoidInfo) Sys() any               { return nil }
func (walVoidInfo) DeviceID() vfs.DeviceID { return vfs.DeviceID{} }
