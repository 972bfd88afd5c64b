package main

import (
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

// TestOfflineMemoryFollowsLiveHeap: the soft limit of the offline
// commands rises with what is live (many logs at once hold as many open
// sessions), so the collector never runs back to back under a limit the
// live heap has passed; it is offlineLimit while little is live. The
// live heap is told, not allocated: a test process that grew would pass
// its high-water mark to the children other tests measure.
func TestOfflineMemoryFollowsLiveHeap(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	debug.SetMemoryLimit(offlineLimit)
	var live atomic.Int64
	live.Store(10 << 20)
	stop, done := make(chan struct{}), make(chan struct{})
	go followLiveHeap(stop, done, live.Load)
	wait := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for debug.SetMemoryLimit(-1) != want {
			if time.Now().After(deadline) {
				t.Fatalf("limit %d MB, want %d MB", debug.SetMemoryLimit(-1)>>20, want>>20)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(200 * time.Millisecond)
	wait(offlineLimit) // little live: the floor
	live.Store(160 << 20)
	wait(240 << 20) // half again what is live
	live.Store(48 << 20)
	wait(80 << 20) // never less than offlineHeadroom over it
	live.Store(20 << 20)
	wait(offlineLimit) // and back down
	close(stop)
	<-done
}
