package verify

import "testing"

// TestLogsOfNothing: verifying no logs is no reports and no error, never
// a panic (the read-ahead is shared across the logs given).
func TestLogsOfNothing(t *testing.T) {
	reps, err := Logs(nil, Options{})
	if err != nil || len(reps) != 0 {
		t.Fatalf("Logs(nil) = %v, %v", reps, err)
	}
}
