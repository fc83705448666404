package nudgefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Everything the sidecar does in the shared volume goes through a volume
// (volume_linux.go): no name the agent planted (a symlink at any component,
// into the volume or out of it, "..") is followed, a fifo never blocks, and
// only a regular file with no other hard link is written.

// Append writes r as one line at the end of dir/File. Anything but a
// regular file at that name is moved aside and a fresh file is created
// exclusively. The file is made readable by every user (0644), so the
// agent's user reads what the sidecar's user wrote. Nothing is read from
// the file.
func Append(dir string, r Record) error {
	return appendLines(dir, File, Encode(r))
}

// AppendVerdicts writes vs at the end of dir/VerdictFile, as Append does.
func AppendVerdicts(dir string, vs []Verdict) error {
	var b []byte
	for _, v := range vs {
		b = append(b, EncodeVerdict(v)...)
	}
	return appendLines(dir, VerdictFile, b)
}

// appendLines appends lines (newline-terminated) to dir/name.
func appendLines(dir, name string, lines []byte) error {
	vol, err := openVolume(dir)
	if err != nil {
		return err
	}
	defer vol.Close()
	f, err := openRegular(vol, name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		if aside := moveAside(vol, name); aside != nil {
			return fmt.Errorf("%s: %w (and moving it aside: %v)", name, err, aside)
		}
		if f, err = openRegular(vol, name, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	defer f.Close()
	// A newline first: a torn last line (the agent's, or a write cut
	// short) ends there instead of swallowing this record. Readers skip
	// the empty lines this leaves.
	_, err = f.Write(append([]byte{'\n'}, lines...))
	return err
}

// openRegular opens name and refuses what is not a plain file of its own.
func openRegular(vol *volume, name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := vol.openFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = notRegular(name, fi)
	}
	if err == nil && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		err = readable(f, fi, perm)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readable gives a file the sidecar owns its mode back (the umask may have
// taken bits away); an agent-owned file keeps the mode its owner chose.
func readable(f *os.File, fi os.FileInfo, perm os.FileMode) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm() == perm {
		return nil
	}
	return f.Chmod(perm) // on the open file: no name is followed
}

// moveAside renames whatever is at name out of the way (a rename moves the
// name, never what a symlink points to). Nothing there is fine.
func moveAside(vol *volume, name string) error {
	err := vol.rename(name, name+".refused-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// InstallHook copies the hook binary at src to dir/HookPath (mode 0755),
// and writes the Adapters beside it in dir (0644): each under a fresh name
// created exclusively, then renamed over the final name, so nothing the
// agent planted is written through.
func InstallHook(dir, src string) error {
	vol, err := openVolume(dir)
	if err != nil {
		return err
	}
	defer vol.Close()
	if err := ownDir(vol, path.Dir(HookPath)); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := install(vol, HookPath, in, 0o755); err != nil {
		return err
	}
	for _, name := range []string{OpencodePlugin, PiExtension} {
		f, err := Adapters.Open("adapters/" + name)
		if err != nil {
			return err
		}
		err = install(vol, name, f, 0o644)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// WriteReady writes ReadyFile in dir (mode 0644), as InstallHook writes
// its files: what the agent planted at that name (a symlink, a fifo, a
// directory) is replaced or moved aside, never written through, and never
// keeps the marker from being written.
func WriteReady(dir string) error {
	vol, err := openVolume(dir)
	if err != nil {
		return err
	}
	defer vol.Close()
	return install(vol, ReadyFile, strings.NewReader(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644)
}

// Ready says why dir holds no ReadyFile as a regular file (nil when it
// does).
func Ready(dir string) error {
	vol, err := openVolume(dir)
	if err != nil {
		return err
	}
	defer vol.Close()
	typ, err := vol.lstat(ReadyFile)
	if err != nil {
		return err
	}
	if !typ.IsRegular() {
		return fmt.Errorf("%s is a %s, not a regular file", ReadyFile, typ.Type())
	}
	return nil
}

// install writes what in holds at name in the volume, by way of an
// exclusive temporary file in the same directory renamed over name. A
// rename over a directory fails: what is at name is then moved aside, and
// the rename tried again.
func install(vol *volume, name string, in io.Reader, perm os.FileMode) error {
	tmp := path.Join(path.Dir(name), "."+path.Base(name)+"."+strconv.FormatInt(time.Now().UnixNano(), 36))
	out, err := openRegular(vol, tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = vol.rename(tmp, name); err != nil {
			if err = moveAside(vol, name); err == nil {
				err = vol.rename(tmp, name)
			}
		}
	}
	if err != nil {
		_ = vol.remove(tmp)
	}
	return err
}

// ownDir makes name a directory in the volume; anything else there (a
// file, a symlink the agent planted) is moved aside first.
func ownDir(vol *volume, name string) error {
	for range 3 {
		typ, err := vol.lstat(name)
		switch {
		case errors.Is(err, os.ErrNotExist):
			err := vol.mkdir(name, 0o755)
			if err == nil || !errors.Is(err, os.ErrExist) {
				return err
			}
			continue // planted in between: look again
		case err != nil:
			return err
		case typ.IsDir():
			return nil
		}
		if err := moveAside(vol, name); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s: cannot make it a directory", name)
}

// ReadAcks reads what the hook acknowledged in dir/AckFile, following no
// symlink: at most MaxAcks bytes of a regular file. A missing file is no
// ack; anything else that cannot be read is an error (and no ack).
func ReadAcks(dir string) (Acks, error) {
	vol, err := openVolume(dir)
	if err != nil {
		return Acks{}, err
	}
	defer vol.Close()
	f, err := vol.openFile(AckFile, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return Acks{}, nil
	}
	if err != nil {
		return Acks{}, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return Acks{}, fmt.Errorf("%s is not a regular file", AckFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxAcks))
	return ParseAcks(b), err
}
