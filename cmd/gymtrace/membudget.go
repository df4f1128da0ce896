package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// defaultMaxBytes sizes the store's byte budget for the machine: a quarter
// of the memory the process may use (the cgroup limit when there is one,
// else physical memory), since the heap runs to about twice the live spans
// and the rest belongs to everything else on the machine. 2 GiB when
// neither can be read.
func defaultMaxBytes() int64 {
	avail := int64(0)
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fs := strings.Fields(sc.Text()); len(fs) >= 2 && fs[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(fs[1], 10, 64); err == nil {
					avail = kb << 10
				}
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (avail == 0 || n < avail) {
			avail = n
		}
	}
	if avail <= 0 {
		return 2 << 30
	}
	return max(avail/4, 64<<20)
}
