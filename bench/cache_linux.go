package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EvictCache makes the next reads of dir's files come from the device. It
// syncs each file and asks the kernel to drop its pages
// (posix_fadvise DONTNEED), which touches nothing but dir; if pages are still
// resident and the process may, it drops the whole page cache
// (echo 1 > /proc/sys/vm/drop_caches). It returns the method that worked and
// the share of dir's pages still resident afterwards (0 is cold).
func EvictCache(dir string) (method string, resident float64, err error) {
	err = walkFiles(dir, func(path string, _ int64) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		// Dirty pages cannot be dropped; an engine's closed files are synced,
		// but a file written without fsync (a baseline) may not be.
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", path, err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return fmt.Errorf("fadvise %s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		return "", 0, fmt.Errorf("bench: evict %s: %w", dir, err)
	}
	method = "fadvise"
	if resident, err = Resident(dir); err != nil || resident == 0 {
		return method, resident, err
	}
	if werr := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1\n"), 0); werr == nil {
		method = "fadvise+drop_caches"
		resident, err = Resident(dir)
	}
	return method, resident, err
}

// CacheControl says how EvictCache can work here, for a report.
func CacheControl() string {
	f, err := os.OpenFile("/proc/sys/vm/drop_caches", os.O_WRONLY, 0)
	if err != nil {
		return "posix_fadvise(DONTNEED) per file; /proc/sys/vm/drop_caches not writable (" + err.Error() + ")"
	}
	f.Close()
	return "posix_fadvise(DONTNEED) per file, then /proc/sys/vm/drop_caches if pages remain (writable here)"
}

// Resident returns the share (0 to 1) of dir's file pages that sit in the
// page cache, from mincore(2) over each file. An empty directory is 0.
func Resident(dir string) (float64, error) {
	page := int64(os.Getpagesize())
	var in, total int64
	err := walkFiles(dir, func(path string, size int64) error {
		if size == 0 {
			return nil
		}
		n, err := residentPages(path, size)
		if err != nil {
			return err
		}
		in += n
		total += (size + page - 1) / page
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("bench: resident pages of %s: %w", dir, err)
	}
	if total == 0 {
		return 0, nil
	}
	return float64(in) / float64(total), nil
}

func residentPages(path string, size int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("mmap %s: %w", path, err)
	}
	defer unix.Munmap(m)
	page := int64(os.Getpagesize())
	vec := make([]byte, (size+page-1)/page)
	// x/sys/unix has no mincore wrapper on Linux.
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return 0, fmt.Errorf("mincore %s: %w", path, errno)
	}
	var n int64
	for _, v := range vec {
		n += int64(v & 1)
	}
	return n, nil
}

// walkFiles calls fn for every regular file under dir. Files that vanish
// meanwhile are skipped: an engine may still be removing obsolete ones.
func walkFiles(dir string, fn func(path string, size int64) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		err = fn(path, info.Size())
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	})
}
