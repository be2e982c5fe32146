package portowner

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procRoot is where the proc file system is mounted; tests replace it.
var procRoot = "/proc"

// Listening returns the process that listens on TCP port, if /proc says.
func Listening(port int) (Process, bool) {
	inodes := map[string]bool{}
	for _, f := range []string{"net/tcp", "net/tcp6"} {
		listenInodes(filepath.Join(procRoot, f), port, inodes)
	}
	if len(inodes) == 0 {
		return Process{}, false
	}
	pids, _ := filepath.Glob(filepath.Join(procRoot, "[0-9]*"))
	for _, dir := range pids {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue // another user's process, or gone
		}
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] {
				name, _ := os.ReadFile(filepath.Join(dir, "comm"))
				return Process{PID: pid, Name: strings.TrimSpace(string(name))}, true
			}
		}
	}
	return Process{}, false
}

// listenInodes adds to inodes the socket inodes of the listening sockets
// on port in the /proc/net/tcp-format file at path.
func listenInodes(path string, port int, inodes map[string]bool) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(p) == port && fields[9] != "0" {
			inodes[fields[9]] = true
		}
	}
}
