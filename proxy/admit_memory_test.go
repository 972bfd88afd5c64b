package proxy

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestListenSessionFloodMemory floods a listening gateway with 20,000
// initialize POSTs from loopback and holds the process's RSS growth
// under 100 MB: each session is held for 30 minutes, so before the cap
// the same flood took the gateway from 19 MB to 484 MB. Once with the
// default limits, where the rate refuses most; once with no rate, where
// the session cap alone must bound memory.
func TestListenSessionFloodMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RSS is read from /proc/self/status")
	}
	if raceEnabled {
		t.Skip("memory is measured without -race: go test ./proxy -run TestListenSessionFloodMemory")
	}
	bin := sdkServer(t)
	runtime.GC()
	base := procStatus(t, "VmRSS")
	for _, v := range []struct {
		name string
		hopt HTTPOptions
	}{
		{"default limits", HTTPOptions{}},
		{"no rate limit", HTTPOptions{NoInitRate: true}},
	} {
		t.Run(v.name, func(t *testing.T) {
			l := startListening(t, gatewaySDKPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}}, v.hopt)
			ok, refused := flood(t, l.url, 20_000, 32)
			runtime.GC()
			rss, peak := procStatus(t, "VmRSS"), procStatus(t, "VmHWM")
			t.Logf("%d sessions admitted, %d refused: RSS %.1f MB before, %.1f MB after, peak %.1f MB",
				ok, refused, float64(base)/1e6, float64(rss)/1e6, float64(peak)/1e6)
			if ok > defaultMaxSessions {
				t.Errorf("%d sessions admitted, over the cap of %d", ok, defaultMaxSessions)
			}
			if peak-base >= 100e6 {
				t.Fatalf("RSS peaked %.1f MB over the %.1f MB before the flood; the bound is 100 MB", float64(peak-base)/1e6, float64(base)/1e6)
			}
		})
	}
}

// flood posts n initialize from workers at once and counts the answers.
func flood(t *testing.T, url string, n, workers int) (ok, refused int64) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				switch code, body, _ := postInit(t, client, url); code {
				case http.StatusOK:
					atomic.AddInt64(&ok, 1)
				case http.StatusServiceUnavailable:
					atomic.AddInt64(&refused, 1)
				default:
					t.Errorf("initialize: %d %q", code, body)
					return
				}
			}
		})
	}
	wg.Wait()
	return ok, refused
}

// procStatus reads a size in /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, found := strings.CutPrefix(sc.Text(), field+":"); found {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
