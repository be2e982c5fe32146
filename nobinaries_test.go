package printgate_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// scriptDirs are the folders whose files may carry the executable bit: the
// scripts the Makefile, the packages and CI run. Anywhere else an
// executable file is a script too (it starts with "#!") or it is a mistake.
var scriptDirs = []string{"scripts/", "installer/", ".ci/"}

// TestNothingBuiltInGit ensures git tracks no built program: no file whose
// first bytes are an executable's (ELF, Windows PE, Mach-O), anywhere, and
// no file with the executable bit outside scriptDirs that is not a script.
// A built binary in the repository bloats every clone for good (the history
// keeps it after it is removed) and can be run by someone who takes it for
// the product of the source beside it. The contents checked are the index's,
// what a commit would hold, not the working tree's.
func TestNothingBuiltInGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed, so there is no checkout to look at")
	}
	if err := exec.Command("git", "rev-parse", "--is-inside-work-tree").Run(); err != nil {
		t.Skip("not in a git checkout (a source archive has nothing tracked)")
	}
	out, err := exec.Command("git", "ls-files", "--stage", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	type entry struct {
		mode, path string
	}
	var files []entry
	var objects bytes.Buffer
	for rec := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		// "<mode> <object> <stage>\t<path>"
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			t.Fatalf("git ls-files: unexpected line %q", rec)
		}
		if f[0] != "100644" && f[0] != "100755" {
			continue // a symlink or a submodule holds no bytes of its own
		}
		files = append(files, entry{f[0], path})
		objects.WriteString(f[1] + "\n")
	}
	if len(files) == 0 {
		t.Fatal("git ls-files lists no file: the check would prove nothing")
	}

	cmd := exec.Command("git", "cat-file", "--batch")
	cmd.Stdin = &objects
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("git cat-file: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("git cat-file: %v", err)
	}
	r := bufio.NewReaderSize(stdout, 1<<16)
	for _, f := range files {
		head, err := readBlobHead(r, 512)
		if err != nil {
			t.Fatalf("git cat-file, reading %s: %v", f.path, err)
		}
		if kind := executableKind(head); kind != "" {
			t.Errorf("%s is a built %s program; untrack it with `git rm --cached %s` "+
				"and let .gitignore ignore it (a release attaches binaries, the tree holds source)",
				f.path, kind, f.path)
			continue
		}
		if f.mode == "100755" && !inScriptDir(f.path) && !bytes.HasPrefix(head, []byte("#!")) {
			t.Errorf("%s has the executable bit but is not a script (no #! line); "+
				"clear it with `git update-index --chmod=-x %s`, or move a script to scripts/",
				f.path, f.path)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("git cat-file: %v", err)
	}
}

// readBlobHead reads one object of `git cat-file --batch` from r and returns
// up to n of its first bytes, reading past the rest.
func readBlobHead(r *bufio.Reader, n int) ([]byte, error) {
	header, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	f := strings.Fields(header) // "<object> <type> <size>"
	if len(f) != 3 || f[1] != "blob" {
		return nil, fmt.Errorf("unexpected object header %q", header)
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("object header %q: %w", header, err)
	}
	head := make([]byte, min(int64(n), size))
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, err
	}
	// The rest of the blob and the newline that ends it.
	if _, err := r.Discard(int(size - int64(len(head)) + 1)); err != nil {
		return nil, err
	}
	return head, nil
}

// executableKind names the format of a program whose first bytes are head,
// or returns "" when they are not a program's.
func executableKind(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "ELF (Linux)"
	case len(head) >= 4 && isMachO(binary.BigEndian.Uint32(head)):
		return "Mach-O (macOS)"
	case bytes.HasPrefix(head, []byte("MZ")):
		// A PE file starts with a DOS stub whose offset 0x3C points at
		// "PE\0\0"; the stub alone may be all of head, so "MZ" with a
		// plausible pointer counts too.
		if len(head) < 0x40 {
			return "PE (Windows)"
		}
		off := int(binary.LittleEndian.Uint32(head[0x3C:]))
		if off+4 > len(head) || bytes.Equal(head[off:off+4], []byte("PE\x00\x00")) {
			return "PE (Windows)"
		}
	}
	return ""
}

// isMachO reports whether magic, read big-endian, is a Mach-O magic number
// in either byte order, 32 or 64 bits, or a universal (fat) binary's.
func isMachO(magic uint32) bool {
	switch magic {
	case 0xFEEDFACE, 0xFEEDFACF, 0xCEFAEDFE, 0xCFFAEDFE, 0xCAFEBABE, 0xBEBAFECA:
		return true
	}
	return false
}

// inScriptDir reports whether path is inside one of scriptDirs.
func inScriptDir(path string) bool {
	for _, d := range scriptDirs {
		if strings.HasPrefix(path, d) {
			return true
		}
	}
	return false
}
