package nudgefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// volume is the shared volume, opened once by its path (the sidecar's own
// configuration). Every name in it is resolved one component at a time from
// the volume's descriptor, each component opened with O_NOFOLLOW: a symlink
// the agent planted, at the last name or at a directory on the way, whether
// it points into the volume or out of it, is never followed (the open fails
// with ELOOP or ENOTDIR). ".", ".." and empty components are refused.
//
// os.Root is not enough here: it keeps a name inside its root, but follows
// a symlink that stays inside, even one at the last name opened with
// O_NOFOLLOW. A nudges file planted as a symlink to the hook binary took
// the record into the binary.
type volume struct {
	fd   int
	path string
}

// openVolume opens the volume at dir (dir itself may be reached through
// symlinks: it is the sidecar's mount, not the agent's name).
func openVolume(dir string) (*volume, error) {
	fd, err := retry(func() (int, error) { return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) })
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return &volume{fd: fd, path: dir}, nil
}

func (v *volume) Close() error { return unix.Close(v.fd) }

// errBadName: a name with an empty, "." or ".." component, or absolute.
var errBadName = errors.New("not a plain relative name")

// parent opens the directory that holds name, following no symlink, and
// returns it with name's last component; done closes it.
func (v *volume) parent(name string) (dirfd int, base string, done func(), err error) {
	parts := strings.Split(name, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return -1, "", nil, &os.PathError{Op: "resolve", Path: name, Err: errBadName}
		}
	}
	fd := v.fd
	for _, p := range parts[:len(parts)-1] {
		next, err := retry(func() (int, error) {
			return unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if fd != v.fd {
			unix.Close(fd)
		}
		if err != nil {
			return -1, "", nil, &os.PathError{Op: "openat", Path: name, Err: err}
		}
		fd = next
	}
	done = func() {}
	if fd != v.fd {
		done = func() { unix.Close(fd) }
	}
	return fd, parts[len(parts)-1], done, nil
}

// openFile opens name with flag (O_NOFOLLOW, O_NONBLOCK and O_CLOEXEC
// added: a fifo never blocks the open).
func (v *volume) openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	dirfd, base, done, err := v.parent(name)
	if err != nil {
		return nil, err
	}
	defer done()
	fd, err := retry(func() (int, error) {
		return unix.Openat(dirfd, base, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
	})
	if err != nil {
		return nil, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), v.path+"/"+name), nil
}

// lstat is the type and link count of what is at name, not following it.
func (v *volume) lstat(name string) (fs.FileMode, error) {
	dirfd, base, done, err := v.parent(name)
	if err != nil {
		return 0, err
	}
	defer done()
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, &os.PathError{Op: "lstat", Path: name, Err: err}
	}
	return fileType(st.Mode), nil
}

// fileType is a stat mode's file type as fs.FileMode type bits.
func fileType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return 0
}

// rename moves the name old to new (a rename moves names: what a symlink
// points to is never touched).
func (v *volume) rename(old, new string) error {
	od, ob, odone, err := v.parent(old)
	if err != nil {
		return err
	}
	defer odone()
	nd, nb, ndone, err := v.parent(new)
	if err != nil {
		return err
	}
	defer ndone()
	if err := unix.Renameat(od, ob, nd, nb); err != nil {
		return &os.LinkError{Op: "renameat", Old: old, New: new, Err: err}
	}
	return nil
}

// remove unlinks the file name (not a directory).
func (v *volume) remove(name string) error {
	dirfd, base, done, err := v.parent(name)
	if err != nil {
		return err
	}
	defer done()
	if err := unix.Unlinkat(dirfd, base, 0); err != nil {
		return &os.PathError{Op: "unlinkat", Path: name, Err: err}
	}
	return nil
}

// mkdir makes the directory name.
func (v *volume) mkdir(name string, perm os.FileMode) error {
	dirfd, base, done, err := v.parent(name)
	if err != nil {
		return err
	}
	defer done()
	if err := unix.Mkdirat(dirfd, base, uint32(perm.Perm())); err != nil {
		return &os.PathError{Op: "mkdirat", Path: name, Err: err}
	}
	return nil
}

// retry calls f again while it is interrupted by a signal.
func retry(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// notRegular says what is at name when it is not a plain file of its own:
// another type, or a file with other hard links (one the agent linked to a
// file it wants written, such as the hook binary).
func notRegular(name string, fi os.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is a %s, not a regular file", name, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("%s has %d hard links, not one", name, st.Nlink)
	}
	return nil
}
