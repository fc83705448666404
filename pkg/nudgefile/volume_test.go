package nudgefile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// hookBytes is the hook binary the tests install.
var hookBytes = []byte("\x7fELF the hook binary\n")

// installed is a volume with the hook installed, and the hook's path.
func installed(t *testing.T) (dir, hook string) {
	t.Helper()
	dir = t.TempDir()
	src := filepath.Join(t.TempDir(), "turnwatch-hook")
	if err := os.WriteFile(src, hookBytes, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := InstallHook(dir, src); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, HookPath)
}

// The sidecar's writes never follow a symlink the agent planted, whether it
// points into the volume (at the hook binary) or out of it, absolute or
// relative, nor write into a file hard-linked to one: each lands in a
// regular file of its own at its name.
func TestWritesNeverFollowWhatTheAgentPlanted(t *testing.T) {
	writes := []struct {
		name  string
		write func(dir string) error
		check func(b []byte) bool // what the file at name holds after it
	}{
		{File, func(dir string) error { return Append(dir, rec(1, "report what you have")) },
			func(b []byte) bool { return len(Parse(b)) == 2 }},
		{VerdictFile, func(dir string) error {
			return AppendVerdicts(dir, []Verdict{{Call: "toolu_1", Refuse: true, Detector: "identicalCalls", Message: "m"}})
		}, func(b []byte) bool { return bytes.Contains(b, []byte("toolu_1")) }},
		{ReadyFile, WriteReady, func(b []byte) bool { return len(b) > 0 }},
	}
	plants := []struct {
		name  string
		plant func(t *testing.T, dir, at, hook, outside string)
	}{
		{"a relative symlink to the hook binary", func(t *testing.T, dir, at, hook, outside string) {
			symlink(t, HookPath, at)
		}},
		{"an absolute symlink to the hook binary", func(t *testing.T, dir, at, hook, outside string) {
			symlink(t, hook, at)
		}},
		{"a symlink to a symlink to the hook binary", func(t *testing.T, dir, at, hook, outside string) {
			symlink(t, HookPath, filepath.Join(dir, "hop"))
			symlink(t, "hop", at)
		}},
		{"a symlink out of the volume", func(t *testing.T, dir, at, hook, outside string) {
			symlink(t, outside, at)
		}},
		{"a hard link to the hook binary", func(t *testing.T, dir, at, hook, outside string) {
			if err := os.Link(hook, at); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, w := range writes {
		for _, p := range plants {
			t.Run(w.name+"/"+p.name, func(t *testing.T) {
				dir, hook := installed(t)
				outside := filepath.Join(t.TempDir(), "token")
				if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
					t.Fatal(err)
				}
				at := filepath.Join(dir, w.name)
				p.plant(t, dir, at, hook, outside)
				for range 2 {
					if err := w.write(dir); err != nil {
						t.Fatal(err)
					}
				}
				if b, _ := os.ReadFile(hook); !bytes.Equal(b, hookBytes) {
					t.Errorf("the hook binary was written: %q", b)
				}
				if b, _ := os.ReadFile(outside); string(b) != "secret" {
					t.Errorf("the file outside the volume was written: %q", b)
				}
				fi, err := os.Lstat(at)
				if err != nil || !fi.Mode().IsRegular() {
					t.Fatalf("%s: %v %v", w.name, fi, err)
				}
				if b, _ := os.ReadFile(at); !w.check(b) {
					t.Errorf("%s holds %q", w.name, b)
				}
			})
		}
	}
}

// The hook is installed through no symlinked directory: one planted at bin
// pointing elsewhere in the volume, swapped in after the first install, is
// moved aside, and what it points to is left alone.
func TestInstallHookThroughNoSymlinkedDir(t *testing.T) {
	dir, hook := installed(t)
	elsewhere := filepath.Join(dir, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	decoy := filepath.Join(elsewhere, filepath.Base(HookPath))
	if err := os.WriteFile(decoy, []byte("decoy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Dir(hook), filepath.Join(dir, "old-bin")); err != nil {
		t.Fatal(err)
	}
	symlink(t, "elsewhere", filepath.Dir(hook))
	src := filepath.Join(t.TempDir(), "turnwatch-hook")
	if err := os.WriteFile(src, hookBytes, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := InstallHook(dir, src); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(decoy); string(b) != "decoy" {
		t.Errorf("installed through the symlinked directory: %q", b)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 1 {
		t.Errorf("wrote into the symlink's target: %v", ents)
	}
	if fi, err := os.Lstat(filepath.Dir(hook)); err != nil || !fi.IsDir() {
		t.Fatalf("bin: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(hook); !bytes.Equal(b, hookBytes) {
		t.Errorf("the hook holds %q", b)
	}
}

// A name with "..", ".", an empty component or a leading slash is refused,
// and a symlinked directory on the way is not followed.
func TestVolumeNames(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "d", filepath.Join(dir, "link"))
	vol, err := openVolume(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer vol.Close()
	for _, name := range []string{"../x", "d/../x", "./x", "/x", "d//x", "", "link/x"} {
		if f, err := vol.openFile(name, os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
			f.Close()
			t.Errorf("%q opened", name)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "d")); len(ents) != 0 {
		t.Errorf("written through the symlinked directory: %v", ents)
	}
	f, err := vol.openFile("d/x", os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func symlink(t *testing.T, target, at string) {
	t.Helper()
	if err := os.Symlink(target, at); err != nil {
		t.Fatal(err)
	}
}
