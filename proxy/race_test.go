//go:build race

package proxy

// raceEnabled: the race detector multiplies memory use, so the memory
// test runs only without it.
const raceEnabled = true
