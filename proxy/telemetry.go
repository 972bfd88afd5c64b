package proxy

import "time"

// Telemetry is told what the gateway did; it changes nothing. Its label
// values are its own to bound: every name here may come from a client
// or a server.
type Telemetry interface {
	// Decided is a recorded decision of a tools/call; pinned is false
	// when the pinning check refused it (the tool is none the session
	// pinned).
	Decided(server, tool string, pinned bool, verdict, check string)
	// Added is what bailiff added to a call decided without a human:
	// all its time but the upstream's round trip.
	Added(server, verdict string, d time.Duration)
	// Upstream is a forwarded call's round trip; answered is false when
	// no answer came.
	Upstream(server string, answered bool, d time.Duration)
}

type noTelemetry struct{}

func (noTelemetry) Decided(string, string, bool, string, string) {}
func (noTelemetry) Added(string, string, time.Duration)          {}
func (noTelemetry) Upstream(string, bool, time.Duration)         {}

func (p *Proxy) telemetry() Telemetry {
	if p.opt.Telemetry == nil {
		return noTelemetry{}
	}
	return p.opt.Telemetry
}
