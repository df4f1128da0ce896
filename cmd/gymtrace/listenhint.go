package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nemo-gym/gymtrace/receiver"
)

// withListenHint adds to an address already in use who holds it (when
// /proc tells) and which flag picks another.
func withListenHint(err error) error {
	var le *receiver.ListenError
	if !errors.As(err, &le) || !le.InUse() {
		return err
	}
	flagName := "--grpc-addr"
	if le.Transport == "OTLP/HTTP" {
		flagName = "--http-addr"
	}
	who := "another process (another gymtrace, or a Collector?)"
	if p := portOwner(le.Addr); p != "" {
		who = p
	}
	host, _, _ := net.SplitHostPort(le.Addr)
	return fmt.Errorf("%w\n  %s is held by %s: stop it, or pick another port with %s %s (port 0 picks a free one), or %s off",
		err, le.Addr, who, flagName, net.JoinHostPort(host, "0"), flagName)
}

// portOwner names the process listening on addr's TCP port, as "pid 123
// (otelcol)", by finding the socket in /proc/net/tcp{,6} and the process
// holding it; "" when /proc does not tell (another user's process, not
// Linux).
func portOwner(addr string) string {
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return ""
	}
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st ... inode
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "0A" { // 0A: listening
				continue
			}
			_, hexPort, ok := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
				inodes["socket:["+fs[9]+"]"] = true
			}
		}
		f.Close()
	}
	if len(inodes) == 0 {
		return ""
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd")
	for _, fdDir := range procs {
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && inodes[link] {
				pid := filepath.Base(filepath.Dir(fdDir))
				comm, _ := os.ReadFile(filepath.Join("/proc", pid, "comm"))
				return fmt.Sprintf("pid %s (%s)", pid, strings.TrimSpace(string(comm)))
			}
		}
	}
	return ""
}
