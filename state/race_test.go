package state_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"bailiff/state"
)

// TestGrantRace: two calls race for one grant, each through a store of
// its own on the same file (two connections, as two gateways or a
// gateway and its restart would hold): exactly one is allowed, the other
// is told the grant was used, and the grant names the winner. 1,000 runs.
func TestGrantRace(t *testing.T) { backends(t, testGrantRace) }

func testGrantRace(t *testing.T, path string) {
	a, b := open(t, path), open(t, path)
	runs := 1000
	if testing.Short() {
		runs = 100
	}
	for i := range runs {
		id := fmt.Sprintf("s-%d", i)
		if err := a.AddAsk(ask(id)); err != nil {
			t.Fatal(err)
		}
		g := &state.Grant{Server: "mail", Tool: "send", Digest: "sha256:" + id, Approver: "lee", Approve: true, Expires: t0.Add(time.Hour), Granted: t0}
		if err := a.Settle(id, t0, g); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for j, s := range []*state.Store{a, b} {
			wg.Go(func() {
				<-start
				errs[j] = s.UseGrant(id, fmt.Sprintf("racer%d", j), t0)
			})
		}
		close(start)
		wg.Wait()
		won := -1
		for j, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("run %d: both calls used grant %s", i, id)
			case err == nil:
				won = j
			case !errors.Is(err, state.ErrUsed):
				t.Fatalf("run %d: racer %d: %v", i, j, err)
			}
		}
		if won < 0 {
			t.Fatalf("run %d: neither call used grant %s: %v", i, id, errs)
		}
		g2, _, err := b.GetGrant(id)
		if err != nil || g2.UsedBy != fmt.Sprintf("racer%d", won) {
			t.Fatalf("run %d: grant used by %q (%v), but racer %d won", i, g2.UsedBy, err, won)
		}
	}
}
